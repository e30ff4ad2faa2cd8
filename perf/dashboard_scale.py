#!/usr/bin/env python3
"""How long `bench dashboard` takes on a big history, how big the page is, and how fast it paints.

    python perf/dashboard_scale.py [--runs 1000] [--figures-per-run 100] [--keep DIR] [--no-browser]

The history is written directly (no benchmark runs): two benchmarks, two systems at two sites
(two history files, as two sites would merge them), each run with 10 configurations (nodes 1..16 ×
two batch sizes) × 10 metrics, 3 repeats each, one run in 50 slowed by 20 % (regressions to
mark). Then `bench dashboard` runs as a separate process (interpreter start included) over both
files, and headless Chromium (Debian's, driven by playwright) opens the page: first contentful
paint, the time until the script has drawn the plots in view and until it has drawn every\nplot (in
idle time), and the page's size. Targets (issue 15): build under 10 s, first paint under 3 s, page
under 10 MB, for 1,000 runs and 100,000 figures.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord

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


def make_histories(folder: str, runs: int, per_run: int) -> list[str]:
    rng = random.Random(15)
    # 10 configurations (nodes 1..16 × two batch sizes), times sequence lengths past 100 figures a
    # run: 1,000 figures a run = 100 configurations × 10 metrics (the 1,000,000-figure history)
    lengths = [str(1024 * (k + 1)) for k in range(max(1, per_run // 100))]
    configs = [
        {"Nodes": str(n), "GlobalBatch": str(b), **({"Seq": q} if len(lengths) > 1 else {})}
        for n in (1, 2, 4, 8, 16)
        for b in (256, 512)
        for q in lengths
    ]
    metrics = METRICS[: max(1, min(len(METRICS), per_run // len(configs)))]
    paths = [os.path.join(folder, "siteA.db"), os.path.join(folder, "siteB.db")]
    histories = [History.open(p) for p in paths]
    for i in range(runs):
        site = i % 2
        bench = ("llm", "resnet50")[(i // 2) % 2]
        record = RunRecord(
            f"run{i}",
            bench,
            system=("A100", "MI250")[site],
            site=("jureca", "lumi")[site],
            started=1.7e9 + i * 3600.0,
            ended=1.7e9 + i * 3600.0 + 600,
            job_ids=[str(10000 + i)],
            nodes="n[1-16]",
            git_commit="0123abcd",
            caramel_version="0.1.0",
            tags=["800M"],
            container="pytorch.sif@sha256:" + "ab" * 32,
            fingerprint={"cpu_count": 128},
        )
        slow = 0.8 if i % 50 == 49 else 1.0
        out = []
        for row in configs:
            scale = int(row["Nodes"]) * (1 + 0.1 * (row["GlobalBatch"] == "512"))
            for name, unit, direction in metrics:
                base = 1000.0 * scale * (slow if direction == "higher" else 1 / slow)
                out.append(
                    Metric(
                        "t",
                        row,
                        name,
                        unit,
                        direction,
                        [base * rng.gauss(1, 0.01) for _ in range(3)],
                    )
                )
        histories[site].add(record, out)
    for h in histories:
        h.db.close()
    return paths


def paint(page_path: str) -> tuple[float, float, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        view = browser.new_page(viewport={"width": 1400, "height": 900})
        started = time.perf_counter()
        view.goto("file://" + page_path)
        view.wait_for_selector("html[data-ready='1']", timeout=120_000)
        ready = time.perf_counter() - started
        fcp = (
            view.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime")
            / 1000
        )
        view.wait_for_selector("html[data-drawn='1']", timeout=600_000)
        everything = time.perf_counter() - started
        browser.close()
    return fcp, ready, everything


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--figures-per-run", type=int, default=100)
    parser.add_argument("--keep", metavar="DIR", help="write the histories and page here (kept)")
    parser.add_argument(
        "--no-browser", action="store_true", help="build the page only (no paint times)"
    )
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="caramel-dashboard-")
    os.makedirs(folder, exist_ok=True)
    try:
        t = time.perf_counter()
        paths = [os.path.join(folder, "siteA.db"), os.path.join(folder, "siteB.db")]
        if not all(
            os.path.exists(p) for p in paths
        ):  # --keep DIR of an earlier call: the same history
            paths = make_histories(folder, args.runs, args.figures_per_run)
        print(
            f"history: {args.runs} runs, {args.runs * args.figures_per_run} figures in 2 files "
            f"({time.perf_counter() - t:.1f} s to write)"
        )
        page = os.path.join(folder, "dashboard.html")
        command = [
            sys.executable,
            "-m",
            "caramel",
            "dashboard",
            "--history",
            paths[0],
            "--history",
            paths[1],
            "-o",
            page,
        ]
        t = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        build = time.perf_counter() - t
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return 1
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
        print(
            f"bench dashboard: {build:.2f} s, peak memory {peak:.0f} MB (targets: "
            f"5 s and 300 MB at 1,000,000 figures); {done.stderr.strip()}"
        )
        print(f"page size: {os.path.getsize(page) / 1e6:.2f} MB (target 8 MB)")
        if args.no_browser:
            return 0
        fcp, ready, everything = paint(page)
        print(
            f"chromium: first contentful paint {fcp:.2f} s (target 3 s), "
            f"plots in view drawn after {ready:.2f} s, every plot after {everything:.2f} s"
        )
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
