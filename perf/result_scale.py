#!/usr/bin/env python3
"""How long `bench result` takes on a run of N finished workpackages, and how a huge log is scanned.

    python perf/result_scale.py --workpackages 10000 [--big-log-mb 200]

The run is made without executing anything: the plan of a CARAML-like benchmark (Megatron-shaped
job.out per workpackage, patterns with statistics and python-mode derived values, a sorted table
with formats) is stored as `bench run` stores it, every workpackage is marked done and its log
written. Then `bench result` runs twice as a separate process (interpreter start included): the
first call analyses every log, the second finds nothing changed. Targets (the issue): first call
at most 3 s, second at most 0.3 s, one log changed 0.6 s, status and info 0.3 s, for 10,000
workpackages on the 2-core machine.

With --big-log-mb, one log of that size is scanned with the same patterns (line-local) and with a
DOTALL pattern, printing the time and the peak memory of the process doing it.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from spaces import factors  # perf/spaces.py, beside this file

BENCH = """name: scale
outpath: scale_run
parameterset:
  - name: space
    parameter:
      - {{name: nodes, type: int, _: "{nodes}"}}
      - {{name: global_batch_size, type: int, _: "{batches}"}}
      - {{name: model, _: "{models}"}}
      - {{name: sequence_length, type: int, _: 2048}}
patternset:
  - name: perf
    pattern:
      - {{name: jobid, type: int, _: "Submitted batch job $jube_pat_int"}}
      - {{name: iter_pat, type: int, _: "iteration\\\\s+$jube_pat_int/\\\\s*$jube_pat_nint"}}
      - {{name: elp_pat, type: float, unit: s, _: "elapsed time per iteration\
 \\\\(s\\\\):\\\\s+$jube_pat_fp"}}
      - {{name: tflops_pat, type: float, _: "TFLOPs:\\\\s+$jube_pat_fp"}}
      - {{name: tokens_per_second, type: float, mode: python, _:\
 "(1.0/$elp_pat_avg)*$global_batch_size*$sequence_length"}}
      - {{name: iterations, type: int, mode: python, _: "$iter_pat_max"}}
step:
  - name: benchmark
    use: space
    do: "true"
analyser:
  - name: analyse
    reduce: false
    use: perf
    analyse:
      - step: benchmark
        file: [job.out, stdout]
result:
  use: analyse
  table:
    name: result
    style: csv
    sort: nodes,global_batch_size
    column:
      - {{title: JobID, _: jobid}}
      - {{title: Nodes, _: nodes}}
      - {{title: GlobalBatchSize, _: global_batch_size}}
      - {{title: Model, _: model}}
      - {{title: Iterations, _: iterations}}
      - {{title: "Time/iteration(s)", format: ".2f", _: elp_pat_avg}}
      - {{title: Tokens/second, format: ".2f", _: tokens_per_second}}
      - {{title: Avg_TFLOPs/GPU, format: ".2f", _: tflops_pat_avg}}
"""


def megatron_log(wp_id: int, iterations: int = 10) -> str:
    lines = [f"[rank 0] starting run {wp_id}"]
    for it in range(1, iterations + 1):
        lines.append(
            f" iteration       {it * 5}/ 9375000 | consumed samples: "
            f"{it * 160} | elapsed time per iteration (s): {0.9 + (wp_id % 7) * 0.01:.4f} | "
            "learning rate: 1.5E-04 | global batch size: 32 | lm loss: 9.1E+00 | TFLOPs: "
            f"{60 + wp_id % 5:.2f} |"
        )
    return "\n".join(lines) + "\n"


def make_run(folder: str, n: int) -> str:
    """A run folder holding the plan and state of N done workpackages with their logs."""
    from caramel import __version__
    from caramel.stages.expand.plan import make_plan
    from caramel.stages.spec.loader import load_one
    from caramel.stages.state.rows import RunInfo
    from caramel.stages.state.store import Store

    a, b, c = factors(n)
    path = os.path.join(folder, "scale.yaml")
    with open(path, "w") as handle:
        handle.write(
            BENCH.format(
                nodes=",".join(str(i) for i in range(1, a + 1)),
                batches=",".join(str(16 * i) for i in range(1, b + 1)),
                models=",".join(f"m{i}" for i in range(c)),
            )
        )
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        bench = load_one(path)
        plan = make_plan(bench, run_id=0)
        run_dir = os.path.abspath(plan.run_dir)
        os.makedirs(run_dir)
        rows = [
            (wp.id, wp.step.name, wp.iteration, [p.id for p in wp.parents], wp.dirname, wp.params())
            for wp in plan.workpackages
        ]
        info = RunInfo(
            0, bench.name, path, bench.home, run_dir, [], folder, time.time(), {}, __version__
        )
        store = Store.create(run_dir, info, bench, rows)
        with store.transaction():
            for row in store.workpackages():
                store.move(row, "finish")
        store.close()
        for wp in plan.workpackages:
            work = os.path.join(run_dir, wp.dirname, "work")
            os.makedirs(work)
            with open(os.path.join(work, "job.out"), "w") as handle:
                handle.write(megatron_log(wp.id))
            with open(os.path.join(work, "stdout"), "w") as handle:
                handle.write(f"Submitted batch job {4000 + wp.id}\n")
        return run_dir
    finally:
        os.chdir(cwd)


# An installed caramel has its bytecode compiled; this machine sets PYTHONDONTWRITEBYTECODE, which
# would add the compilation of every module to each call.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return took, proc.stdout


def big_log(folder: str, megabytes: int) -> None:
    """Write one Megatron-shaped log of `megabytes` and scan it in a fresh process (clean peak
    RSS)."""
    path = os.path.join(folder, "big.out")
    line = megatron_log(1, 1).splitlines()[1] + "\n"
    with open(path, "w") as handle:
        block = line * 1000
        for _ in range(megabytes * 1024 * 1024 // len(block)):
            handle.write(block)
    for case in ("lines", "dotall"):
        proc = subprocess.run(
            [sys.executable, __file__, "--scan", path, case], capture_output=True, text=True
        )
        print(proc.stdout.rstrip() or proc.stderr)


def scan_one(path: str, case: str) -> None:
    from caramel.stages.analyse.patterns import BUILTIN_PATTERNS as B
    from caramel.stages.analyse.patterns import Probe
    from caramel.stages.analyse.scan import scan_file
    from caramel.stages.analyse.stats import Accumulator

    if case == "lines":
        probes = [
            Probe(
                "elp",
                re.compile(rf"elapsed time per iteration \(s\):\s+{B['jube_pat_fp']}", re.M),
                "float",
            ),
            Probe(
                "it",
                re.compile(rf"iteration\s+{B['jube_pat_int']}/\s*{B['jube_pat_nint']}", re.M),
                "int",
            ),
            Probe("tf", re.compile(rf"TFLOPs:\s+{B['jube_pat_fp']}", re.M), "float"),
        ]
    else:
        probes = [
            Probe("blk", re.compile(r"consumed samples: (\d+) \|.*?TFLOPs", re.M | re.S), "int")
        ]
    accs = {p.name: Accumulator(p.kind) for p in probes}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    scan_file(path, probes, lambda n, found: accs[n].add(found))
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = os.path.getsize(path) / 2**20
    counts = ", ".join(f"{n}: {a.cnt} matches" for n, a in accs.items())
    print(
        f"  {size:.0f} MB log, {'3 line patterns' if case == 'lines' else '1 DOTALL pattern'}: "
        f"{took:.1f} s ({size / took:.0f} MB/s), peak RSS {peak / 1024:.0f} MB (before the scan "
        f"{before / 1024:.0f} MB); {counts}"
    )


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--scan":
        scan_one(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, default=10000)
    parser.add_argument("--big-log-mb", type=int, default=0, help="also scan one log of this size")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="caramel-result-scale-")
    ENV["CARAMEL_HISTORY"] = os.path.join(
        folder, "history.db"
    )  # the figures include adding to the history
    bench = [sys.executable, "-m", "caramel"]
    start = time.perf_counter()
    run_dir = make_run(folder, args.workpackages)
    print(
        f"run of {args.workpackages} done workpackages made in "
        f"{time.perf_counter() - start:.1f} s: {run_dir}"
    )
    timed(bench + ["--version"])  # compiles caramel's bytecode once, as an installation has it
    first, out = timed(bench + ["result", run_dir, "--no-files"])
    rows = len(out.splitlines()) - 2
    second, out2 = timed(bench + ["result", run_dir, "--no-files"])
    assert out == out2, "the second result differs from the first"
    touched = os.path.join(run_dir, "000007_benchmark", "work", "job.out")
    with open(touched, "a") as handle:
        handle.write(megatron_log(7, 1).splitlines()[1] + "\n")
    third, _ = timed(bench + ["result", run_dir, "--no-files"])
    status, _ = timed(bench + ["status", run_dir])
    info, _ = timed(bench + ["info", run_dir])
    startup, _ = timed([sys.executable, "-c", "import caramel.cli.main"])
    print(f"bench result, first call (analyse all):  {first:.2f} s   (target 3 s; {rows} rows)")
    print(f"bench result, nothing changed:           {second:.2f} s   (target 0.3 s)")
    print(f"bench result, one log changed:           {third:.2f} s   (target 0.6 s)")
    print(f"bench status:                            {status:.2f} s   (target 0.3 s)")
    print(f"bench info:                              {info:.2f} s   (target 0.3 s)")
    print(f"  of which python start + imports:       {startup:.2f} s")
    if args.big_log_mb:
        big_log(folder, args.big_log_mb)
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    else:
        print(f"kept: {folder}")


if __name__ == "__main__":
    main()
