#!/usr/bin/env python3
"""bench's own CPU for the README's main job, as a share of the job's wall time (issue 21: <= 1 %).

    python perf/bench_cpu.py                                  # 3 rounds of this checkout
    python perf/bench_cpu.py --rounds 5 --src before=/tmp/old/src --src after=src

Each round runs, for every source tree given (interleaved, starting at a different one each round):
`bench run llm --tag 117M local` then `bench result -i last`, in a fresh folder, and `bench --help` and
`bench run --help`. bench's own CPU is its process's utime + stime (RUSAGE_SELF, read as it exits),
never its children's (the trainer, the energy wrapper): what bench itself costs. The share is taken of
the job's wall time as measured here, and of --quiet-wall (the job's wall time on a quiet node, 11.4 s
in docs/benchmarks.md), since a loaded machine stretches the wall time and not bench's CPU.

Every tree is byte-compiled first (an installed package is; PYTHONDONTWRITEBYTECODE would otherwise
make every call compile caramel's sources: +0.1..0.2 s). Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench in-process, its own CPU printed as it exits (after everything it runs has been waited for)
WATCHED = """
import atexit, resource, sys
def _own():
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(f"BENCH_OWN_CPU {r.ru_utime + r.ru_stime:.4f}", file=sys.__stderr__)
atexit.register(_own)
sys.argv = ["bench", *sys.argv[1:]]
from caramel.cli.main import main
sys.exit(main())
"""


def own_cpu(src: Path, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(bench's own CPU seconds, wall seconds) of `bench ARGV` with caramel from `src`."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WATCHED, *argv], cwd=cwd, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(src)})
    wall = time.perf_counter() - start
    if done.returncode not in (0,) and "--help" not in argv:
        sys.exit(f"bench {' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    line = next(x for x in reversed(done.stderr.splitlines()) if x.startswith("BENCH_OWN_CPU"))
    return float(line.split()[1]), wall


def one_round(src: Path, work: Path) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(dir=work))
    shutil.copytree(ROOT / "benchmarks", folder / "benchmarks")
    env = {**os.environ, "CARAMEL_DATA_DIR": str(folder / "data"), "CARAMEL_HISTORY": str(folder / "history.db")}
    run_cpu, run_wall = own_cpu(src, ["run", "benchmarks/llm.yaml", "--tag", "117M", "local", "-q"], folder, env)
    result_cpu, _ = own_cpu(src, ["result", "-i", "last", "benchmarks/llm_benchmark_run"], folder, env)
    help_cpu, _ = own_cpu(src, ["--help"], folder, env)
    run_help_cpu, _ = own_cpu(src, ["run", "--help"], folder, env)
    bare = subprocess.run([sys.executable, "-c", "import resource; r = resource.getrusage(resource.RUSAGE_SELF); "
                           "print(r.ru_utime + r.ru_stime)"], capture_output=True, text=True, env=env)
    shutil.rmtree(folder, ignore_errors=True)
    return {"run": run_cpu, "result": result_cpu, "wall": run_wall, "help": help_cpu, "run --help": run_help_cpu,
            "python": float(bare.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--src", action="append", default=[], metavar="NAME=DIR",
                        help="a caramel source tree to measure (repeatable; default: this checkout's src)")
    parser.add_argument("--quiet-wall", type=float, default=11.4, metavar="SECONDS",
                        help="the job's wall time on a quiet node, for the second share (default 11.4)")
    args = parser.parse_args()
    trees = dict(s.split("=", 1) for s in args.src) or {"this": str(ROOT / "src")}
    for src in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=True, stdout=subprocess.DEVNULL)
    print(f"load average at start {os.getloadavg()}", flush=True)
    names = list(trees)
    results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                results[name].append(one_round(Path(trees[name]), Path(tmp)))
                row = results[name][-1]
                print(f"round {r + 1} {name}: run {row['run']:.3f} s, result {row['result']:.3f} s, "
                      f"job wall {row['wall']:.1f} s", flush=True)
    report(results, args.quiet_wall)
    print(f"load average at end {os.getloadavg()}")


def report(results: dict[str, list[dict[str, float]]], quiet_wall: float) -> None:
    keys = ["python", "help", "run --help", "run", "result"]
    print("\nbench's own CPU, s: median (min..max); 'python' is `python -c` alone (this environment's site)")
    print(f"{'tree':8} " + " ".join(f"{k:>20}" for k in keys))
    for name, rows in results.items():
        cells = [f"{statistics.median(r[k] for r in rows):.3f} ({min(r[k] for r in rows):.2f}..{max(r[k] for r in rows):.2f})"
                 for k in keys]
        print(f"{name:8} " + " ".join(f"{c:>20}" for c in cells))
    for name, rows in results.items():
        run = statistics.median(r["run"] for r in rows)
        both = statistics.median(r["run"] + r["result"] for r in rows)
        wall = statistics.median(r["wall"] for r in rows)
        print(f"{name}: bench run {run:.3f} s = {100 * run / wall:.2f} % of the job's wall time here ({wall:.1f} s), "
              f"{100 * run / quiet_wall:.2f} % of {quiet_wall} s; run + result {both:.3f} s = "
              f"{100 * both / quiet_wall:.2f} % of {quiet_wall} s   (target <= 1 %)")


if __name__ == "__main__":
    main()
