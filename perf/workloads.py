#!/usr/bin/env python3
"""Does the shipped `llm` job on `local` measure the machine or caramel? Interleaved rounds of
separate processes, as a user runs them:

  trainer    caramel's GPT trainer alone (`python -m caramel.payloads.workloads.gpt`), the local
  shape, on the
             layout caramel chooses (caramel.payloads.workloads.layout: $CARAMEL_CPU_LAYOUT, a
             stored measurement of the node, the rule), the probe's winner (--probe) or --layout
  plain-PxT  a minimal plain-PyTorch loop of the same shape and model class (perf/plain_gpt.py) in
             P processes x T threads, for every candidate layout of this node: the rule's, 1x1, one
             process with all cores (1xN) and one gloo DDP rank per core (Nx1): which one the node
             favours
  wrapped    the trainer under the energy wrapper (caramel.payloads.measure)           } not with
  job        the job's three commands run bare: corpus, wrapped trainer, energy combination }
  --quick bench      `bench run llm --tag 117M local` (the same commands, through bench)     }
  fixed      the energy wrapper around `python -c pass`, against `python -c pass` alone }

Without --quick, first, in one process, caramel's timed loop against the plain loop in alternating
blocks (perf/plain_gpt.py --ab): the loops' difference without the noise of separate processes.

    python perf/workloads.py --quick           # 5 rounds, trainer and plain layouts, 60 iterations
    (< 3 min quiet) python perf/workloads.py                   # 5 rounds, everything, the shipped
    iteration count python perf/workloads.py --rounds 7 --layout 1x2
    python perf/workloads.py --quick --probe   # the layout probe first (bench layout --measure),
    its winner

Each round runs every variant once, starting at a different one (rotation), so drift and other
users' load fall on all of them alike; every round line shows the load average beside it. Prints per
variant the median and the spread (min..max) of wall time, tokens/s and tokens per CPU second (rank
0's CPU over the timed loop, times the ranks: on a shared machine the figure other users' load moves
least), the trainer against the plain loop of its layout three ways (ratio of the medians, median of
the rounds' paired ratios, ratio of tokens per CPU second), the layout the node favours, and the
targets of issue 21: trainer within 5 % of the best plain loop, timed training most of the trainer's
wall time, bench + energy wrapper within 1 % of the job's wall time and of the trainer's throughput.
Not a test: it prints figures (docs/benchmarks.md quotes them).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SHAPE = [
    "--num-layers",
    "2",
    "--hidden-size",
    "64",
    "--num-attention-heads",
    "4",
    "--seq-length",
    "64",
    "--micro-batch-size",
    "2",
    "--global-batch-size",
    "8",
]
TOKENS_PER_ITERATION = 8 * 64
SHIPPED_ITERS = 400  # benchmarks/llm.yaml's train_iters for caramel's trainer on a CPU
ITERATION = re.compile(r"elapsed time per iteration \(s\): ([\d.]+)")
TIMED = re.compile(r"> timed: (\d+) iterations in ([\d.]+) s, CPU ([\d.]+) s")
Row = dict[str, float]


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(
            f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-2000:]}\n"
            f"{done.stderr[-2000:]}"
        )
    return wall, done.stdout + done.stderr


def run_watched(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str, float]:
    """Like run(), plus the CPU seconds the process itself used (utime + stime of /proc/PID/stat,
    its children not included), read every 20 ms until it ends: what bench or the energy wrapper
    costs beside the commands it runs."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True
        )
        own, tick = 0.0, os.sysconf("SC_CLK_TCK")
        while proc.poll() is None:
            try:
                fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                own = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15)
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.02)
        wall = time.perf_counter() - start
        out.seek(0)
        log = out.read()
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(command)}\n{log[-4000:]}")
    return wall, log, own


def trainer_figures(log: str, processes: int = 1) -> Row:
    """From a trainer's log: tokens/s as the table computes it (from the iteration lines), the timed
    seconds, and tokens per CPU second over the timed loop (rank 0's CPU from its `> timed:` line,
    times the ranks: they do the same work)."""
    seconds = [float(t) for t in ITERATION.findall(log)]
    row = {"tokens": TOKENS_PER_ITERATION * len(seconds) / sum(seconds), "timed_s": sum(seconds)}
    timed = TIMED.search(log)
    if timed:
        row["tokens_cpu"] = (
            TOKENS_PER_ITERATION * int(timed.group(1)) / float(timed.group(3)) / processes
        )
    return row


class Harness:
    def __init__(self, work: Path, processes: int, threads: int, iters: int) -> None:
        self.work, self.processes, self.threads, self.iters = work, processes, threads, iters
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "CARAMEL_CPU_LAYOUT": f"{processes}x{threads}",
            "CARAMEL_DATA_DIR": str(work / "data"),
            "CARAMEL_HISTORY": str(work / "history.db"),
        }
        self.corpus = work / "corpus" / "corpus_text_document"
        run(
            [PY, "-m", "caramel.payloads.workloads.data", "--output-prefix", str(self.corpus)],
            work,
            self.env,
        )

    def launcher(self, processes: int) -> list[str]:
        if processes == 1:
            return [PY]
        return [
            PY,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(processes),
        ]

    def trainer_command(self, corpus: Path) -> list[str]:
        return [
            *self.launcher(self.processes),
            "-m",
            "caramel.payloads.workloads.gpt",
            *SHAPE,
            "--train-iters",
            str(self.iters),
            "--warmup-iters",
            "5",
            "--data-path",
            str(corpus),
            "--threads",
            str(self.threads),
        ]

    def wrapper(self, out: Path) -> list[str]:
        return [
            PY,
            "-m",
            "caramel.payloads.measure",
            "--method",
            "gh",
            "--interval",
            "100",
            "--out-dir",
            str(out),
            "--suffix",
            "local_power.0",
            "--",
        ]

    def plain(self, processes: int, threads: int) -> Row:
        wall, log = run(
            [
                *self.launcher(processes),
                str(ROOT / "perf" / "plain_gpt.py"),
                "--threads",
                str(threads),
                "--iters",
                str(self.iters),
            ],
            self.work,
            self.env,
        )
        cpu = float(re.search(r"plain cpu seconds: ([\d.]+)", log).group(1))
        return {
            "wall": wall,
            "tokens": float(re.search(r"plain tokens/s: ([\d.]+)", log).group(1)),
            "tokens_cpu": TOKENS_PER_ITERATION * self.iters / cpu / processes,
        }

    def trainer(self, wrapped: bool = False) -> Row:
        prefix = self.wrapper(self.work / "energy") if wrapped else []
        wall, log, own = run_watched(
            [*prefix, *self.trainer_command(self.corpus)], self.work, self.env
        )
        row = trainer_figures(log, self.processes)
        mfu = re.search(r"> MFU: ([\d.]+) %", log)
        return {
            **row,
            "wall": wall,
            "timed": row["timed_s"] / wall,
            "mfu": float(mfu.group(1)),
            "own_cpu": own if wrapped else 0.0,
        }

    def job(self) -> Row:
        folder = Path(tempfile.mkdtemp(dir=self.work))
        corpus = folder / "data" / "corpus_text_document"
        wall, _ = run(
            [PY, "-m", "caramel.payloads.workloads.data", "--output-prefix", str(corpus)],
            folder,
            self.env,
        )
        trained, log = run(
            [*self.wrapper(folder / "energy"), *self.trainer_command(corpus)], folder, self.env
        )
        combined, _ = run(
            [PY, "-m", "caramel.adapters.energy.combine", "energy", "--output", "local_energy.csv"],
            folder,
            self.env,
        )
        return {"wall": wall + trained + combined, "tokens": trainer_figures(log)["tokens"]}

    def bench(self) -> Row:
        folder = Path(tempfile.mkdtemp(dir=self.work))
        shutil.copytree(ROOT / "benchmarks", folder / "benchmarks")
        wall, _, own = run_watched(
            [PY, "-m", "caramel", "run", "benchmarks/llm.yaml", "--tag", "117M", "local"],
            folder,
            self.env,
        )
        log = next(
            folder.glob("benchmarks/llm_benchmark_run/*/*_benchmark/work/job.out")
        ).read_text()
        return {"wall": wall, "tokens": trainer_figures(log)["tokens"], "own_cpu": own}

    def fixed(self) -> Row:
        bare, _ = run([PY, "-c", "pass"], self.work, self.env)
        wrapped, _ = run(
            [*self.wrapper(self.work / "energy-fixed"), PY, "-c", "pass"], self.work, self.env
        )
        return {"wall": wrapped - bare}


def candidate_layouts(rule: tuple[int, int], cores: int) -> list[tuple[int, int]]:
    """The rule's layout, one single-threaded process, one process with every core, one rank per
    core."""
    return list(dict.fromkeys([rule, (1, 1), (1, cores), (cores, 1)]))


def name_of(layout: tuple[int, int]) -> str:
    return f"plain-{layout[0]}x{layout[1]}"


def summary(samples: list[float], digits: int = 3) -> str:
    return (
        f"{statistics.median(samples):.{digits}f} "
        f"({min(samples):.{digits}f}..{max(samples):.{digits}f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="trainer and plain layouts only, 60 iterations, no in-process comparison (< 3 "
        "min quiet)",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--iters",
        type=int,
        default=0,
        help=f"timed iterations (default: {SHIPPED_ITERS}, the shipped file's, "
        "so `bench` is comparable; 60 with --quick)",
    )
    parser.add_argument(
        "--layout",
        default="",
        help="PxT; default: caramel's choice now (caramel.payloads.workloads.layout:"
        " $CARAMEL_CPU_LAYOUT, a stored measurement, the rule)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="first run the layout probe (`bench layout --measure`, "
        "not stored) and let the trainer "
        "run its winner: what a user gets after measuring the node",
    )
    parser.add_argument(
        "--stored",
        action="store_true",
        help="the trainer on caramel's choice from your data folder as it is now; default: a fresh "
        "node's (an empty data folder: the first bench run measures the layout and keeps it)",
    )
    parser.add_argument(
        "--layouts",
        default="",
        metavar="PxT,...",
        help="the plain loop's layouts (default: the trainer's, 1x1, 1xN, Nx1 for N usable cores); "
        "under load leave out multi-threaded ones: 2 threads on 2 busy cores crawl",
    )
    args = parser.parse_args()
    iters = args.iters or (60 if args.quick else SHIPPED_ITERS)
    sys.path.insert(0, str(ROOT / "src"))
    from caramel.payloads.workloads.layout import layout_choice, parse_layout, usable_cpus

    if args.probe:
        layout, why = probe()
    elif args.layout:
        layout, why = parse_layout(args.layout), "given"
    elif args.stored:
        choice = layout_choice()
        layout, why = choice.layout, choice.why
    else:
        layout, why = first_use()
    rule = (layout.processes, layout.threads)
    cores = len(usable_cpus())
    print(
        f"layout {rule[0]}x{rule[1]} ({why}); {cores} usable cores; "
        f"{iters} timed iterations; {load()} at start",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        h = Harness(Path(tmp), *rule, iters)
        if (
            not args.quick
        ):  # the loops alone, in one process (caramel's timed loop against the plain one)
            _, ab = run(
                [PY, str(ROOT / "perf" / "plain_gpt.py"), "--ab", "15", "--threads", str(rule[1])],
                h.work,
                h.env,
            )
            print("in-process, alternating blocks of 20 iterations (15 each):\n" + ab, flush=True)
        variants: dict[str, Callable[[], Row]] = {"trainer": h.trainer}
        chosen = [
            rule,
            *(
                (x.processes, x.threads)
                for x in map(parse_layout, filter(None, args.layouts.split(",")))
            ),
        ]
        for candidate in dict.fromkeys(chosen) if args.layouts else candidate_layouts(rule, cores):
            variants[name_of(candidate)] = lambda c=candidate: h.plain(*c)
        if not args.quick:
            variants.update(
                {
                    "wrapped": lambda: h.trainer(wrapped=True),
                    "job": h.job,
                    "bench": h.bench,
                    "fixed": h.fixed,
                }
            )
        results = rounds(variants, args.rounds)
    report(results, rule, cores)
    print(f"{load()} at end")


def first_use():
    """caramel's layout on a fresh node, as the first `bench run llm --tag 117M local` takes it: an
    empty data folder, CARAMEL_LAYOUT_MEASURE=auto, the CLI's first-use measurement (stored in that
    temporary folder only)."""
    from caramel.cli.layout import measure_first_use
    from caramel.payloads.workloads import layout

    with tempfile.TemporaryDirectory() as data:
        os.environ.update(CARAMEL_DATA_DIR=data, CARAMEL_LAYOUT_MEASURE="auto")
        os.environ.pop("CARAMEL_CPU_LAYOUT", None)
        layout.measure_on_first_use(measure_first_use)
        choice = layout.layout_choice("gpt", runs_here=True)
    print(f"fresh node: {choice.describe()} ({load()})", flush=True)
    return choice.layout, f"fresh node: {choice.why}"


def probe():
    """The layout probe of `bench layout --measure` (its defaults: the shipped shape, 30 iterations
    x 3 runs of each candidate), not stored: its winner and what it rests on; prints its rounds and
    cost."""
    from caramel.payloads.workloads import layout_probe
    from caramel.payloads.workloads.layout import parse_layout

    plan = layout_probe.ProbePlan("gpt", layout_probe.candidate_layouts())
    measurement = layout_probe.measure(plan, lambda line: print(f"probe {line}", flush=True))
    print(
        f"probe: {measurement.layout} wins ({measurement.summary()}); "
        f"it took {measurement.seconds:.1f} s ({load()})",
        flush=True,
    )
    return parse_layout(measurement.layout), f"probed now: {measurement.summary()}"


def rounds(variants: dict[str, Callable[[], Row]], count: int) -> dict[str, list[Row]]:
    names = list(variants)
    results: dict[str, list[Row]] = {name: [] for name in names}
    for r in range(count):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            results[name].append(variants[name]())
        cells = ", ".join(
            f"{n} {results[n][-1]['wall']:.1f}s"
            + (f" {results[n][-1]['tokens']:.0f} tok/s" if "tokens" in results[n][-1] else "")
            for n in names
        )
        print(f"round {r + 1} ({load()}): {cells}", flush=True)
    return results


def report(results: dict[str, list[Row]], rule: tuple[int, int], cores: int) -> None:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    print(
        f"\n{'variant':11} {'wall s: median (min..max)':>28} {'tokens/s: median (min..max)':>30} "
        f"{'tokens per CPU s (all ranks)':>30}"
    )
    for name, rows in results.items():
        tokens = summary([r["tokens"] for r in rows], 0) if "tokens" in rows[0] else ""
        per_cpu = summary([r["tokens_cpu"] for r in rows], 0) if "tokens_cpu" in rows[0] else ""
        print(f"{name:11} {summary([r['wall'] for r in rows]):>28} {tokens:>30} {per_cpu:>30}")
    same = name_of(rule)
    paired = [
        t["tokens"] / p["tokens"] for t, p in zip(results["trainer"], results[same], strict=True)
    ]
    print(f"\ntrainer / {same} (same layout, separate processes; target >= 0.95):")
    print(
        "  ratio of the medians (tokens/s):        "
        f"{med('trainer', 'tokens') / med(same, 'tokens'):.3f}"
    )
    print(f"  median of the rounds' paired ratios:    {summary(paired)}")
    print(
        "  ratio of tokens per CPU second:         "
        f"{med('trainer', 'tokens_cpu') / med(same, 'tokens_cpu'):.3f}"
    )
    plains = [n for n in results if n.startswith("plain-")]
    best = max(plains, key=lambda n: med(n, "tokens"))
    wins = Counter(
        max(plains, key=lambda n, i=i: results[n][i]["tokens"])
        for i in range(len(results["trainer"]))
    )
    print(
        f"layout the node favours (best plain median): {best}; round winners: "
        + ", ".join(f"{n} {c}" for n, c in wins.most_common())
        + f"; the trainer ran {rule[0]}x{rule[1]}"
        + (" (the same)" if best == same else " (differs)")
    )
    thrifty = max(plains, key=lambda n: med(n, "tokens_cpu"))
    print(
        f"layout that needs the least CPU per token: {thrifty} (under load the wall-time "
        "winner can be the one "
        f"that takes the most of the shared cores: several processes get several shares)"
    )
    print(
        f"trainer / best plain ({best}):        "
        f"{med('trainer', 'tokens') / med(best, 'tokens'):.3f}"
    )
    print(
        f"timed iterations / trainer wall time:  {med('trainer', 'timed'):.2f}   (target: "
        "most of it)"
    )
    print(f"trainer MFU (% of the measured GEMM rate): {med('trainer', 'mfu'):.2f}")
    if "job" in results:
        report_overheads(results, med)
    print(
        f"(measured with {cores} usable cores shared with other users: "
        "see the spreads and the load averages)"
    )


def report_overheads(results: dict[str, list[Row]], med: Callable[[str, str], float]) -> None:
    job = med("job", "wall")
    print(
        f"energy wrapper start-up (fixed):       {med('fixed', 'wall'):.3f} s = "
        f"{100 * med('fixed', 'wall') / job:.2f} % of the job's wall time"
    )
    print(
        "energy wrapper, wall (wrapped - bare): "
        f"{med('wrapped', 'wall') - med('trainer', 'wall'):+.3f} s = "
        f"{100 * (med('wrapped', 'wall') - med('trainer', 'wall')) / job:+.2f} % of the "
        "job's wall time"
    )
    print(
        "energy wrapper, throughput:            "
        f"{100 * (med('wrapped', 'tokens') / med('trainer', 'tokens') - 1):+.2f} %"
    )
    print(
        f"bench, wall (bench run - bare job):    {med('bench', 'wall') - job:+.3f} s = "
        f"{100 * (med('bench', 'wall') - job) / med('bench', 'wall'):+.2f} % of its wall time"
    )
    print(
        "bench, throughput (vs bare trainer):   "
        f"{100 * (med('bench', 'tokens') / med('trainer', 'tokens') - 1):+.2f} %"
    )
    for name, what in (("wrapped", "energy wrapper"), ("bench", "bench")):
        own, wall = med(name, "own_cpu"), med(name, "wall")
        print(
            f"{what}'s own CPU (not its children): {own:.3f} s over {wall:.1f} s = "
            f"{100 * own / wall:.2f} % of one core"
            f" = {100 * own / job:.2f} % of the job's wall time"
        )


if __name__ == "__main__":
    main()
