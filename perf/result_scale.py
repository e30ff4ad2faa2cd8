#!/usr/bin/env python3
"""How long `bench result` takes on a run of N finished workpackages, and how a huge log is scanned.

    python perf/result_scale.py --workpackages 10000 [--rounds 3] [--pythonpath SRC ...]
                                [--big-log-mb 200]

The run is made without executing anything: the plan of a CARAML-like benchmark (Megatron-shaped
job.out per workpackage, patterns with statistics and python-mode derived values, a sorted table
with formats) is stored as `bench run` stores it, every workpackage is marked done and its log
written. Then `bench result --no-files` runs as a separate process (interpreter start included),
each call with the history and again with `--no-history`, so that the history's share of each is
the difference: the first call (analyses every log), a call that finds nothing changed, and one
after one log grew. Each call is timed in wall seconds and in CPU seconds (user and system of the
process and its children), the latter less disturbed by the other jobs of a shared machine.
Targets (issue 35): first call at most 2.5 s, nothing changed 0.25 s, one log changed 0.4 s, for
10,000 workpackages on the 2-core machine; status and info 0.3 s.

`--pythonpath SRC` (repeated): time the caramel of each SRC folder instead of the one installed,
round by round in turn on copies of one run (before and after a change, interleaved).

With --big-log-mb, one log of that size is scanned with the same patterns (line-local) and with a
DOTALL pattern, printing the time and the peak memory of the process doing it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
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
BENCH_CMD = [sys.executable, "-m", "caramel"]


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process and its children) of a command, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return took, cpu, proc.stdout


CALLS = ("first", "unchanged", "one log changed")
TARGETS = {"first": 2.5, "unchanged": 0.25, "one log changed": 0.4}


def one_round(run_dir: str, history: str, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Each call with the history and without (`<call>` and `<call> -h`): (wall, CPU) seconds."""
    out: dict[str, tuple[float, float]] = {}
    result = BENCH_CMD + ["result", run_dir, "--no-files"]
    bare = result + ["--no-history"]
    for with_history in (False, True):  # the first call twice, from no analysis cache
        for name in os.listdir(run_dir):
            if name.startswith("analyse.db"):
                os.unlink(os.path.join(run_dir, name))
        if os.path.exists(history):
            os.unlink(history)
        wall, cpu, first = timed(result if with_history else bare, env)
        out["first" if with_history else "first -h"] = (wall, cpu)
    wall, cpu, again = timed(result, env)
    assert again == first, "the second result differs from the first"
    out["unchanged"] = (wall, cpu)
    out["unchanged -h"] = timed(bare, env)[:2]
    for wp, command, name in ((7, result, "one log changed"), (8, bare, "one log changed -h")):
        touched = os.path.join(run_dir, f"{wp:06d}_benchmark", "work", "job.out")
        with open(touched, "a") as handle:
            handle.write(megatron_log(wp, 1).splitlines()[1] + "\n")
        out[name] = timed(command, env)[:2]
    out["status"] = timed(BENCH_CMD + ["status", run_dir], env)[:2]
    out["info"] = timed(BENCH_CMD + ["info", run_dir], env)[:2]
    out["python start + imports"] = timed([sys.executable, "-c", "import caramel.cli.main"], env)[
        :2
    ]
    return out


def spread(values: list[float]) -> str:
    """The median, and the range where there are several."""
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.median(values):.3f} ({min(values):.3f}..{max(values):.3f})"


def report(label: str, rounds: list[dict[str, tuple[float, float]]]) -> None:
    """Per call: wall and CPU seconds (median and range over the rounds), the history's share."""
    print(f"{label}: {len(rounds)} round(s); wall s | CPU s")
    for call in CALLS:
        walls = [r[call][0] for r in rounds]
        cpus = [r[call][1] for r in rounds]
        share_wall = [r[call][0] - r[call + " -h"][0] for r in rounds]
        share_cpu = [r[call][1] - r[call + " -h"][1] for r in rounds]
        print(
            f"  bench result, {call:16s} {spread(walls)} | {spread(cpus)}   "
            f"(target {TARGETS[call]} s); the history's share {spread(share_wall)} | "
            f"{spread(share_cpu)}"
        )
    for call in ("status", "info", "python start + imports"):
        print(
            f"  {call:30s} {spread([r[call][0] for r in rounds])} | "
            f"{spread([r[call][1] for r in rounds])}"
        )


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
    # compiled as analyse.patterns compiles them: by the regex module (a time bound per match)
    import regex

    from caramel.stages.analyse.patterns import BUILTIN_PATTERNS as B
    from caramel.stages.analyse.patterns import Probe
    from caramel.stages.analyse.scan import scan_file
    from caramel.stages.analyse.stats import Accumulator

    if case == "lines":
        probes = [
            Probe(
                "elp",
                regex.compile(rf"elapsed time per iteration \(s\):\s+{B['jube_pat_fp']}", regex.M),
                "float",
            ),
            Probe(
                "it",
                regex.compile(rf"iteration\s+{B['jube_pat_int']}/\s*{B['jube_pat_nint']}", regex.M),
                "int",
            ),
            Probe("tf", regex.compile(rf"TFLOPs:\s+{B['jube_pat_fp']}", regex.M), "float"),
        ]
    else:
        probes = [
            Probe(
                "blk",
                regex.compile(r"consumed samples: (\d+) \|.*?TFLOPs", regex.M | regex.S),
                "int",
            )
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
    parser.add_argument("--rounds", type=int, default=1, help="times each call is timed")
    parser.add_argument(
        "--pythonpath",
        action="append",
        default=[],
        metavar="SRC",
        help="a caramel source folder to time (repeated: interleaved round by round)",
    )
    parser.add_argument("--big-log-mb", type=int, default=0, help="also scan one log of this size")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="caramel-result-scale-")
    start = time.perf_counter()
    made = make_run(folder, args.workpackages)
    print(
        f"run of {args.workpackages} done workpackages made in "
        f"{time.perf_counter() - start:.1f} s: {made}; load {os.getloadavg()}"
    )
    trees = args.pythonpath or [""]
    runs = {}
    for n, src in enumerate(trees):
        env = dict(ENV, PYTHONPATH=src) if src else dict(ENV)
        copy = os.path.join(folder, f"copy{n}", os.path.basename(made))
        shutil.copytree(made, copy, symlinks=True)  # one run folder each, the same logs
        timed(BENCH_CMD + ["--version"], env)  # compiles the bytecode once, as an installation has
        runs[src] = (copy, os.path.join(folder, f"history{n}.db"), env, [])
    for _round in range(args.rounds):
        for _src, (run_dir, history, env, rounds) in runs.items():
            rounds.append(one_round(run_dir, history, dict(env, CARAMEL_HISTORY=history)))
    for src, (_run_dir, _history, _env, rounds) in runs.items():
        report(src or "caramel as installed", rounds)
    print(f"load after: {os.getloadavg()}")
    if args.big_log_mb:
        big_log(folder, args.big_log_mb)
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        print(f"kept: {folder}")


if __name__ == "__main__":
    main()
