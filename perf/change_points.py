#!/usr/bin/env python3
"""Change points on a seeded synthetic history with known truth (issue 24), and their speed.

    python perf/change_points.py                 # seeds 1-12 of 200 series x 60 runs: recall, false
                                                 # flags, the best possible recall, causes, events
    python perf/change_points.py --seeds 4242    # a seed kept out of the test suite
    python perf/change_points.py --without-fingerprints   # each series judged alone
    python perf/change_points.py --scale         # 1,000 series x 1,000 runs (10^6 figures), timed

Prints, per seed: the injected steps found within +-2 runs (recall), the clean series flagged, the
share a least-squares location knowing there is one step reaches (the bound no detector that looks
at one series alone beats on that history; changes.find also reads the runs' fingerprints), whether
each injected driver update is one event naming the driver. Not a test."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.consumers.history.synthetic_changes import generate  # noqa: E402
from tests.consumers.history.test_changes import best_possible, detect  # noqa: E402


def evaluate(
    seed: int, series: int, runs: int, fingerprints: bool = True
) -> tuple[int, int, int, int, float, str]:
    truth = generate(seed, series=series, runs=runs)
    started, cpu = time.perf_counter(), time.process_time()
    found, events = detect(truth, fingerprints)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    hits = sum(any(abs(c.index - s) <= 2 for c in found[n]) for n, s in truth.steps.items())
    flagged = sum(bool(found[n]) for n in truth.clean)
    updates = [e for e in events if any(c.startswith("driver: ") for c in e.causes)]
    named = sum(
        sum(truth.runs.index(e.run_after) == r and len(e.causes) == 1 for e in updates) == 1
        for r in truth.events
    )
    word = f"{named}/{len(truth.events)} driver updates one event naming it, {len(events)} events"
    return hits, len(truth.steps), flagged, len(truth.clean), seconds, f"{word}; CPU {cpu:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=list(range(1, 13)))
    parser.add_argument("--scale", action="store_true", help="1,000 series x 1,000 runs, timed")
    parser.add_argument(
        "--without-fingerprints",
        action="store_true",
        help="the runs record no fingerprint: each series judged alone",
    )
    args = parser.parse_args()
    if args.scale:
        hits, steps, flagged, clean, seconds, word = evaluate(1, 1000, 1000)
        print(
            f"10^6 figures: {seconds:.2f} s wall; recall {hits}/{steps}, clean flagged "
            f"{flagged}/{clean}; {word}"
        )
        return
    total, low = [0, 0, 0, 0], 0
    for seed in args.seeds:
        hits, steps, flagged, clean, seconds, word = evaluate(
            seed, 200, 60, not args.without_fingerprints
        )
        bound = best_possible(generate(seed))
        total = [total[0] + hits, total[1] + steps, total[2] + flagged, total[3] + clean]
        low += hits / steps < 0.9
        print(
            f"seed {seed}: recall {hits}/{steps} = {hits / steps:.3f} (best possible {bound:.3f}); "
            f"clean flagged {flagged}/{clean} = {flagged / clean:.3f}; {word}; {seconds:.2f} s"
        )
    print(f"all: recall {total[0] / total[1]:.3f}, clean flagged {total[2] / total[3]:.3f}")
    print(f"seeds under 0.90 recall: {low}/{len(args.seeds)}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
