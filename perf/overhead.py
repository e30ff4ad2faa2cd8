#!/usr/bin/env python3
"""caramel's own cost per workpackage: `bench run`, `bench continue` (nothing left) and JUBE.

    python perf/overhead.py --workpackages 1000
    python perf/overhead.py --workpackages 10000 --jube-at 100 200

A trivial benchmark (3 parameters, one `echo` step, a pattern, a table), one workpackage at a time.
Prints wall times, the peak memory (max RSS) of the bench process, and, where JUBE 2.7.1 is
installed, JUBE's time on the same file at the smaller sizes (JUBE is quadratic: keep them small).
Targets on a 2-core machine (the issue): 1,000 in well under 5 s; 10,000 within 60 s and 300 MB;
`continue` with nothing to do on 10,000 within 2 s. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from spaces import factors  # perf/spaces.py, beside this file

JUBE = os.environ.get("JUBE", "/tmp/jube-parity/jube-venv/bin/jube")


def write_benchmark(folder: str, n: int) -> str:
    a, b, c = factors(n)
    path = os.path.join(folder, "overhead.xml")
    with open(path, "w") as handle:
        handle.write(f"""<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="overhead" outpath="runs">
    <parameterset name="space">
      <parameter name="nodes" type="int">{",".join(str(i) for i in range(1, a + 1))}</parameter>
      <parameter name="batch"\
 type="int">{",".join(str(16 * i) for i in range(1, b + 1))}</parameter>
      <parameter name="model">{",".join(f"m{i}" for i in range(c))}</parameter>
    </parameterset>
    <patternset name="pat"><pattern name="value" type="int">value=$jube_pat_int</pattern>\
</patternset>
    <step name="run">
      <use>space</use>
      <do>echo value=$nodes $batch $model</do>
    </step>
    <analyser name="ana"><use>pat</use><analyse step="run"><file>stdout</file></analyse></analyser>
    <result><use>ana</use><table name="t" style="csv"><column>nodes</column>\
<column>value</column></table></result>
  </benchmark>
</jube>
""")
    return path


def timed(cmd: list[str], cwd: str, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB of the process tree's largest member, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.read().decode(errors="replace")[-2000:])
    return wall, usage.ru_maxrss / 1024, proc.returncode


def bench_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "caramel", *args]


def has_result_command() -> bool:
    proc = subprocess.run(bench_cmd("result", "--help"), capture_output=True)
    return proc.returncode == 0


def measure_bench(n: int, data_dir: str) -> dict:
    folder = tempfile.mkdtemp(prefix=f"overhead{n}_")
    try:
        write_benchmark(folder, n)
        env = dict(os.environ, CARAMEL_DATA_DIR=data_dir)
        run_wall, run_rss, code = timed(bench_cmd("run", "overhead.xml", "--quiet"), folder, env)
        if code != 0:
            raise SystemExit(f"bench run failed ({code})")
        cont_wall, cont_rss, code = timed(
            bench_cmd("continue", "runs", "-i", "last", "--quiet"), folder, env
        )
        if code != 0:
            raise SystemExit(f"bench continue failed ({code})")
        out = {
            "n": n,
            "run": run_wall,
            "run_rss": run_rss,
            "continue": cont_wall,
            "continue_rss": cont_rss,
        }
        if has_result_command():  # `bench result` comes with a later issue: measured once it exists
            wall, _rss, code = timed(bench_cmd("result", "runs", "-i", "last"), folder, env)
            out["result"] = wall if code == 0 else None
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure_jube(n: int) -> float | None:
    if not os.access(JUBE, os.X_OK):
        return None
    folder = tempfile.mkdtemp(prefix=f"jube{n}_")
    try:
        write_benchmark(folder, n)
        wall, _rss, code = timed([JUBE, "run", "--hide-animation", "overhead.xml"], folder)
        return wall if code == 0 else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, nargs="+", default=[1000])
    parser.add_argument(
        "--jube-at",
        type=int,
        nargs="*",
        default=[100, 200],
        help="sizes to compare with JUBE 2.7.1 (none: skip JUBE)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure each size this often and print the fastest (a shared machine is noisy)",
    )
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="overhead_data_")
    try:
        print(
            f"{'workpackages':>12} {'run':>8} {'per wp':>8} {'peak RSS':>9} "
            f"{'continue':>9} {'result':>8}"
        )
        for n in args.workpackages:
            m = min(
                (measure_bench(n, data_dir) for _ in range(args.repeat)), key=lambda r: r["run"]
            )
            result = (
                "n/a"
                if "result" not in m
                else (f"{m['result']:.2f}s" if m["result"] is not None else "failed")
            )
            print(
                f"{n:>12} {m['run']:>7.2f}s {m['run'] / n * 1000:>6.2f}ms {m['run_rss']:>7.0f}MB "
                f"{m['continue']:>8.2f}s {result:>8}",
                flush=True,
            )
        if "result" not in m:
            print(
                "result: n/a (bench result comes with a later issue; "
                "this harness times it once it exists)"
            )
        if args.jube_at:
            if not os.access(JUBE, os.X_OK):
                print(f"JUBE not found at {JUBE} (set JUBE=...): no comparison")
                return 0
            print(f"\n{'workpackages':>12} {'JUBE run':>9} {'bench run':>10} {'JUBE / bench':>13}")
            for n in args.jube_at:
                jube = measure_jube(n)
                mine = min(measure_bench(n, data_dir)["run"] for _ in range(args.repeat))
                ratio = f"{jube / mine:.1f}x" if jube else "-"
                print(
                    f"{n:>12} {jube or float('nan'):>8.2f}s {mine:>9.2f}s {ratio:>13}", flush=True
                )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
