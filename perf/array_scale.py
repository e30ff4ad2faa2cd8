#!/usr/bin/env python3
"""How kind `bench run` is to SLURM: sbatch calls and the time until every job is queued, for N
workpackages of one submit step as one job each vs as a job array; and a chain of three dependent
submit steps, all queued by one `bench run` without a scheduler poll in between.

    eval "$(tests/cluster/localcluster.sh env)"     # the test cluster (started as root)
    python perf/array_scale.py --workpackages 1000 --repeats 3    # or --quick: one pair

Every sbatch goes through a shim on PATH that logs when it returns, so the calls caramel's shell
makes (one job each) and those caramel makes itself (arrays) are counted alike; "queued" is the
last sbatch's return, from the moment `bench run` was started. The jobs are submitted held
(`--hold` in the system file: the shared machine runs none of them) and cancelled afterwards.
Targets (issue 15): 1 sbatch for N <= MaxArraySize, >= 20x less time to queued; the chain queued
within one run, no sacct/squeue before its last sbatch. The two ways are measured in turn
(`--repeats` pairs, medians compared) after one warm-up run, with Python's bytecode kept as an
installed caramel keeps it. The time to queued is wall time: on a loaded machine it is mostly
waiting for a core, so the load average is printed beside it; the CPU ratio is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SYSTEM = "scheduler: slurm\npartition: debug\naccount: caramel\ntime_limit: '00:05:00'\nextra_sbatch: ['--hold']\n"
SHIM = """#!/bin/bash
"{real}" "$@"; rc=$?
echo "$(date +%s.%N) sbatch" >> "{log}"
exit $rc
"""
QUERY_SHIM = """#!/bin/bash
echo "$(date +%s.%N) {name}" >> "{log}"
exec "{real}" "$@"
"""


def setup(folder: Path) -> dict[str, str]:
    """The shims (sbatch, sacct, squeue: each call logged) and the held system file; the environment."""
    bin_dir, log = folder / "bin", folder / "calls.log"
    bin_dir.mkdir()
    for name, text in (("sbatch", SHIM), ("sacct", QUERY_SHIM), ("squeue", QUERY_SHIM)):
        real = shutil.which(name)
        if real is None:
            sys.exit(f"{name} is not on PATH: start the test cluster (tests/cluster/localcluster.sh)")
        (bin_dir / name).write_text(text.format(real=real, log=log, name=name))
        (bin_dir / name).chmod(0o755)
    (folder / "sys").mkdir()
    (folder / "sys" / "held.yaml").write_text(SYSTEM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_", "PYTHONDONTWRITEBYTECODE"))}
    # bytecode kept (in the temporary folder) as an installed caramel has it: without it every bench
    # compiles caramel's modules again (0.3 s of CPU), which no user's bench does
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", CARAMEL_DATA_DIR=str(folder / "data"),
               PYTHONPATH=str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", ""),
               PYTHONPYCACHEPREFIX=str(folder / "pycache"))
    return env


def bench(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caramel", *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=3600)


def calls(folder: Path, since: float) -> list[tuple[float, str]]:
    log = folder / "calls.log"
    lines = log.read_text().split("\n") if log.exists() else []
    out = [(float(t), name) for t, name in (line.split() for line in lines if line.strip())]
    return [(t, name) for t, name in out if t >= since]


def one_step(folder: Path, env: dict[str, str], n: int, array: bool, repeat: int = 0) -> dict[str, float]:
    """N workpackages of one submit step; sbatch calls and seconds from `bench run` to the last queued."""
    work = folder / (("array" if array else "single") + str(repeat))
    work.mkdir()
    (work / "b.yaml").write_text(f"""name: scale
outpath: runs
parameterset:
  - name: p
    parameter: {{name: i, type: int, _: "{','.join(map(str, range(n)))}"}}
step:
  - name: job
    use: p
    submit: true
    array: {'true' if array else 'false'}
    do: echo $i
""")
    start, cpu = time.time(), _children_cpu()
    done = bench(work, env, "run", "b.yaml", "--tag", "held", "--systems", str(folder / "sys"))
    ended, cpu = time.time(), _children_cpu() - cpu
    if done.returncode not in (0, 1):
        sys.exit(done.stderr)
    sbatch = [t for t, name in calls(folder, start) if name == "sbatch" and t <= ended]
    status = json.loads(bench(work, env, "status", "-i", "last", "--format", "json").stdout)
    queued = sum(1 for wp in status["workpackages"] if wp["job_id"])
    bench(work, env, "cancel", "-i", "last")
    return {"sbatch": len(sbatch), "queued_s": max(sbatch) - start if sbatch else float("nan"),
            "bench_run_s": ended - start, "jobs": queued, "cpu_s": cpu}


def _children_cpu() -> float:
    """CPU seconds of the processes this one waited for (bench, its shells, the sbatch they ran)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def chain(folder: Path, env: dict[str, str]) -> dict[str, object]:
    """Three dependent submit steps (4 workpackages each, arrays): queued by one `bench run`?"""
    work = folder / "chain"
    work.mkdir()
    (work / "c.yaml").write_text("""name: chain
outpath: runs
parameterset:
  - name: p
    parameter: {name: i, type: int, _: "0,1,2,3"}
step:
  - {name: one, use: p, submit: true, array: true, do: echo one $i}
  - {name: two, use: p, depend: one, submit: true, array: true, do: echo two $i}
  - {name: three, use: p, depend: two, submit: true, array: true, do: echo three $i}
""")
    start = time.time()
    bench(work, env, "run", "c.yaml", "--tag", "held", "--systems", str(folder / "sys"))
    made = calls(folder, start)
    status = json.loads(bench(work, env, "status", "-i", "last", "--format", "json").stdout)
    bench(work, env, "cancel", "-i", "last")
    last_sbatch = max(t for t, name in made if name == "sbatch")
    polls_before = sum(1 for t, name in made if name != "sbatch" and t < last_sbatch)
    return {"sbatch": sum(1 for _, name in made if name == "sbatch"),
            "queued_in_one_run": all(wp["job_id"] for wp in status["workpackages"]),
            "polls_before_last_sbatch": polls_before}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, default=1000)
    parser.add_argument("--repeats", "-r", type=int, default=3,
                        help="pairs (one job each, then the array) measured in turn; the medians are compared")
    parser.add_argument("--quick", action="store_true", help="one pair (under 3 minutes on a quiet machine)")
    args = parser.parse_args()
    repeats = 1 if args.quick else max(1, args.repeats)
    pairs: list[tuple[dict[str, float], dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = setup(folder)
        one_step(folder, env, 4, array=True, repeat=-1)  # warm-up: bytecode written, slurmctld awake
        for k in range(repeats):  # interleaved: a load that changes meanwhile touches both alike
            pairs.append((one_step(folder, env, args.workpackages, array=False, repeat=k),
                          one_step(folder, env, args.workpackages, array=True, repeat=k)))
            print(f"  pair {k + 1}: one job each {pairs[-1][0]['queued_s']:.2f} s, array {pairs[-1][1]['queued_s']:.2f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
        linked = chain(folder, env)
    single = {key: statistics.median(p[0][key] for p in pairs) for key in pairs[0][0]}
    array = {key: statistics.median(p[1][key] for p in pairs) for key in pairs[0][1]}
    print(f"{args.workpackages} workpackages of one submit step (jobs held, then cancelled), median of {repeats}:")
    for name, got in (("one job each", single), ("job array", array)):
        print(f"  {name:13s} sbatch calls {got['sbatch']:5.0f}  queued after {got['queued_s']:7.2f} s  "
              f"(bench run {got['bench_run_s']:6.2f} s, CPU {got['cpu_s']:6.2f} s, {got['jobs']:.0f} jobs recorded)")
    ratio = single["queued_s"] / array["queued_s"] if array["queued_s"] else float("inf")
    each = ", ".join(f"{s['queued_s'] / a['queued_s']:.1f}x" for s, a in pairs if a["queued_s"])
    print(f"  time to queued: {ratio:.1f}x less with the array (target >= 20x; each pair: {each}); "
          f"sbatch calls {array['sbatch']:.0f} (target 1 for <= MaxArraySize)")
    print(f"  CPU: {single['cpu_s'] / array['cpu_s']:.1f}x less with the array; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (the time to queued depends on it)")
    print(f"chain of 3 dependent submit steps: {linked['sbatch']} sbatch, all queued in one bench run: "
          f"{linked['queued_in_one_run']}, scheduler polls before the last sbatch: {linked['polls_before_last_sbatch']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
