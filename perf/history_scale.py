#!/usr/bin/env python3
"""A history of 1,000,000 figures (1,000 runs): `bench export`, `bench import`, `bench history list`
and `bench dashboard` on it, each timed as a separate process with its peak memory.

    python perf/history_scale.py [--quick] [--runs 1000] [--figures-per-run 1000] [--rounds 2]
                                 [--keep DIR] [--steps export,import,list,dashboard,changes] [--url
                                 postgresql://...] [--compare-with OLD/src]

The history is written directly through the store's batch insert (no benchmark runs, a few seconds):
two benchmarks, two systems at two sites, each run with 100 configurations (nodes 1..16 × two batch
sizes × ten sequence lengths) × 10 metrics, 3 repeats each, one run in 50 slowed by 20 % (outliers,
no change), and a driver update at 60 % of the runs that slows the first site by 6 % (a change
point in each of its series, one event). Then, `--rounds` times, interleaved: export it to JSON
lines, import that file into a new history, list the history, build the dashboard. Each command runs
as `python -m caramel` in a child process (interpreter start included); its peak memory is the
child's own (os.wait4's rusage). `--quick`: 100 runs (100,000 figures), under a minute. `--url`: the
same on a PostgreSQL history (the import goes into a fresh SQLite file there too, the export reads
the server). `--compare-with`: each step also run by another caramel (`git archive REV src | tar -x
-C DIR`), interleaved, with the CPU seconds of each: the ratios hold on a loaded machine, where the
times do not (SQLite only: the other caramel reads a copy of the history, so it must read layout 4;
to compare with a caramel of an older layout, run this harness from each tree, interleaved). Every
tree is compiled first and its commands read the compiled modules, as an installed caramel does.
Targets (issue 24, 1,000,000 figures): import and export ≤ 15 s and ≤ 200 MB each, history list
≤ 0.5 s, the dashboard ≤ 5 s and ≤ 300 MB with a page of at most 8 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from caramel.consumers.history.store import (
    FIGURE_COLUMNS,
    RUN_COLUMNS,
    History,
    RunRecord,
    upsert,
)

METRICS = [
    ("Tokens/second", "", "higher"),
    ("TFLOPs", "", "higher"),
    ("Time/iteration", "s", "lower"),
    ("Energy", "Wh", "lower"),
    ("Tokens/J", "", "higher"),
    ("AvgPower", "W", "lower"),
    ("Memory", "GB", "lower"),
    ("Loss", "", "lower"),
    ("Step time p50", "s", "lower"),
    ("Step time p99", "s", "lower"),
]
TARGETS = {
    "export": (15.0, 200.0),
    "import": (15.0, 200.0),
    "list": (0.5, None),
    "dashboard": (5.0, 300.0),
    "changes": (10.0, None),
}


def configurations(per_run: int) -> list[dict[str, str]]:
    lengths = [str(1024 * (k + 1)) for k in range(max(1, per_run // 100))]
    return [
        {"Nodes": str(n), "GlobalBatch": str(b), **({"Seq": q} if len(lengths) > 1 else {})}
        for n in (1, 2, 4, 8, 16)
        for b in (256, 512)
        for q in lengths
    ]


def driver(run: int, runs: int) -> str:
    """The accelerator driver of run `run` of `runs`: updated at 60 % of the history."""
    return "550" if run < 0.6 * runs else "560"


def make_history(target: str, runs: int, per_run: int) -> int:
    """Write the history at `target` (a file or a URL) in one transaction a hundred runs; the
    figures written."""
    rng = random.Random(24)
    configs = configurations(per_run)
    metrics = METRICS[: max(1, min(len(METRICS), per_run // len(configs)))]
    config_texts = [json.dumps(row) for row in configs]
    figures = 0
    with History(target) as history:
        for first in range(0, runs, 100):
            run_rows, metric_rows = [], []
            for i in range(first, min(runs, first + 100)):
                site = i % 2
                started = 1.7e9 + i * 3600.0
                run_rows.append(
                    (
                        f"run{i}",
                        ("llm", "resnet50")[(i // 2) % 2],
                        "",
                        f"/runs/r{i}",
                        '["800M"]',
                        ("A100", "MI250")[site],
                        "0.1.0",
                        "0123abcd",
                        "login1",
                        "n[1-16]",
                        json.dumps([str(10000 + i)]),
                        "pytorch.sif@sha256:" + "ab" * 32,
                        "",
                        started,
                        started + 600,
                        ("jureca", "lumi")[site],
                        json.dumps({"cpu_count": 128, "driver": driver(i, runs)}),
                    )
                )
                slow = 0.8 if i % 50 == 49 else 1.0
                if site == 0 and driver(i, runs) == "560":
                    slow *= 0.94  # the driver update slows the first site by 6 %
                for row, text in zip(configs, config_texts, strict=True):
                    scale = int(row["Nodes"]) * (1 + 0.1 * (row["GlobalBatch"] == "512"))
                    for name, unit, direction in metrics:
                        base = 1000.0 * scale * (slow if direction == "higher" else 1 / slow)
                        samples = [base * rng.gauss(1, 0.01) for _ in range(3)]
                        mean = sum(samples) / 3
                        sd = (sum((s - mean) ** 2 for s in samples) / 2) ** 0.5
                        metric_rows.append(
                            (
                                f"run{i}",
                                "t",
                                text,
                                name,
                                unit,
                                direction,
                                3,
                                mean,
                                sd,
                                min(samples),
                                max(samples),
                                "[" + ",".join(map(repr, samples)) + "]",
                            )
                        )
            with history.writing():
                history.db.executemany(upsert("runs", RUN_COLUMNS, ("run_key",), False), run_rows)
                ids = dict(history.db.execute("SELECT run_key, id FROM runs").fetchall())
                per_run: dict[str, list[tuple]] = {}
                for row in metric_rows:
                    per_run.setdefault(row[0], []).append(row)
                for run in run_rows:  # each run's series numbered, as History.add does
                    record = RunRecord(run[0], run[1], system=run[5])
                    history.db.executemany(
                        upsert("figures", FIGURE_COLUMNS[:-1], FIGURE_COLUMNS[:2], False),
                        history.figure_rows(record, ids[run[0]], per_run.get(run[0], [])),
                    )
            figures += len(metric_rows)
        history.recount()  # the rows were written raw: store each run's counts as every writer does
    return figures


def run_measured(args: list[str], env: dict) -> tuple[float, float, float, str]:
    """Run `bench ARGS`: seconds, peak memory in MB, CPU seconds (user + system) and its output.
    The peak is measured by /usr/bin/time, whose own small process forks the command: Linux counts
    the memory of a process before its exec in its peak, so a child forked by this harness (which
    holds the history builder's memory) would show the harness's peak, not its own."""
    timer = shutil.which("time", path="/usr/bin:/bin")
    started = time.perf_counter()
    command = [sys.executable, "-m", "caramel", *args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err_file:
        process = subprocess.Popen(
            ([timer, "-f", "\nPEAK_KB %M CPU_S %U %S"] if timer else []) + command,
            env=env,
            stdout=out,
            stderr=err_file,
            text=True,
        )
        together = 0  # the proportional memory of the command and any children, sampled
        while process.poll() is None:
            together = max(together, tree_pss_kb(process.pid))
            time.sleep(0.02)
        took = time.perf_counter() - started
        out.seek(0)
        err_file.seek(0)
        stdout, stderr = out.read(), err_file.read()
    RUN_PSS_MB[0] = together / 1024
    if process.returncode:
        sys.exit(f"bench {' '.join(args)} failed ({process.returncode}):\n{stderr[-3000:]}")
    err, _, stats = stderr.rpartition("\nPEAK_KB ")
    if not timer or not stats:
        return took, float("nan"), float("nan"), (stdout + stderr).strip()
    peak, _, user, system = stats.split()
    return took, int(peak) / 1024, float(user) + float(system), (stdout + err).strip()


RUN_PSS_MB = [0.0]  # the last command's peak of its processes' memory together


def tree_pss_kb(pid: int) -> int:
    """The proportional set size (shared pages split between their sharers) of `pid` and its
    descendants, from /proc (0 where there is none): what a command of several processes holds."""
    total = 0
    try:
        children = [
            int(k)
            for task in os.listdir(f"/proc/{pid}/task")
            for k in open(f"/proc/{pid}/task/{task}/children").read().split()
        ]
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            total = next((int(line.split()[1]) for line in handle if line.startswith("Pss:")), 0)
    except OSError:  # gone, or no /proc
        return total
    return total + sum(tree_pss_kb(child) for child in children)


STEPS = ("export", "import", "list", "dashboard", "changes")


def one_round(
    folder: str, histories: dict[str, str], trees: dict[str, dict], steps: list[str]
) -> None:
    """Each step once per caramel tree (this one, and --compare-with's), interleaved."""
    export = os.path.join(folder, "export.jsonl")
    page = os.path.join(folder, "dashboard.html")
    for name in steps:
        for tree, env in trees.items():
            history = histories[tree]
            args = {
                "export": ["export", "--history", history, "-o", export],
                "import": ["import", export, "--history", os.path.join(folder, "imported.db")],
                "list": ["history", "list", "--history", history],
                "dashboard": ["dashboard", "--history", history, "-o", page],
                "changes": ["history", "changes", "--history", history],
            }[name]
            if name == "import" and os.path.exists(args[3]):
                os.unlink(args[3])
            took, peak, cpu, text = run_measured(args, env)
            extra = ""
            if name == "export":
                extra = f", {os.path.getsize(export) / 1e6:.0f} MB written"
            elif name == "dashboard":
                extra = (
                    f", page {os.path.getsize(page) / 1e6:.2f} MB (target 8 MB), "
                    f"processes together {RUN_PSS_MB[0]:.0f} MB"
                )
            elif name in ("list", "changes"):
                extra = f", {len(text.splitlines())} lines"
            seconds, memory = TARGETS[name]
            print(
                f"  {name:9s} {tree:5s} {took:6.2f} s (target {seconds:g} s; "
                f"cpu {cpu:5.2f} s), peak {peak:5.0f} MB"
                + (f" (target {memory:g} MB)" if memory else "")
                + extra
                + f"  [load {os.getloadavg()[0]:.1f}]",
                flush=True,
            )
    if os.path.exists(os.path.join(folder, "imported.db")):
        os.unlink(os.path.join(folder, "imported.db"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 runs (100,000 figures)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--figures-per-run", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--keep", metavar="DIR", help="write the history, export and page here (kept; reused)"
    )
    parser.add_argument(
        "--steps",
        default=",".join(STEPS),
        help="the steps to time, in order (default all: export,import,list,dashboard,changes; the "
        "import reads the export of a round before, or of an earlier call with --keep)",
    )
    parser.add_argument(
        "--url", help="a PostgreSQL history to fill and measure (emptied first by the caller)"
    )
    parser.add_argument(
        "--compare-with",
        metavar="SRC",
        help="another caramel's src folder (git archive REV src): "
        "each step run by both, interleaved, for ratios on a loaded machine",
    )
    args = parser.parse_args()
    runs = 100 if args.quick else args.runs
    steps = [step for step in args.steps.split(",") if step]
    if not steps or set(steps) - set(STEPS):
        parser.error(f"--steps takes some of {', '.join(STEPS)}")
    folder = args.keep or tempfile.mkdtemp(prefix="caramel-history-scale-")
    os.makedirs(folder, exist_ok=True)
    # the children read compiled modules, as an installed caramel does (a PYTHONDONTWRITEBYTECODE
    # environment would otherwise compile every module in every timed command: a quarter second)
    env = {
        **os.environ,
        "CARAMEL_DATA_DIR": os.path.join(folder, "data"),
        "PYTHONPYCACHEPREFIX": os.path.join(folder, "pycache"),
    }
    env.pop("CARAMEL_HISTORY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    trees = {"new": {**env, "PYTHONPATH": here}}
    if args.compare_with:
        trees["base"] = {**env, "PYTHONPATH": os.path.abspath(args.compare_with)}
    for tree_env in trees.values():
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", tree_env["PYTHONPATH"]],
            env=tree_env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    try:
        history = args.url or os.path.join(folder, f"history-{runs}x{args.figures_per_run}.db")
        t = time.perf_counter()
        if args.url or not os.path.exists(history):
            figures = make_history(history, runs, args.figures_per_run)
            print(
                f"history: {runs} runs, {figures:,} figures written in "
                f"{time.perf_counter() - t:.1f} s"
            )
        histories = {tree: history for tree in trees}
        if "base" in trees and not args.url:
            histories["base"] = shutil.copy(history, os.path.join(folder, "history-base.db"))
        print(
            f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
            f"{os.getloadavg()[2]:.2f}"
        )
        for number in range(args.rounds):
            print(f"round {number + 1} (load {os.getloadavg()[0]:.2f}):", flush=True)
            one_round(folder, histories, trees, steps)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
