#!/usr/bin/env python3
"""The fuzzing layer run long: the targets of tests/fuzz/fuzz_targets.py, many examples each.

    nice python3 perf/fuzz_long.py [--examples 100000] [--target NAME ...] [--jobs 2] [--seed 1]
                                   [--shards N] [--minutes M]

`--examples` is the total over the targets, shared by the weights below (a marker line costs a
fraction of a millisecond, a benchmark file tens); every reader must answer with a result or a
caramel error. Printed per target: examples run, findings (internal errors: distinct by exception
type and the place it was raised, with the first input that raised it), seconds. Exit 1 when there
is a finding. The same targets run briefly in the suite (tests/fuzz/test_fuzz_inputs.py).
`--minutes` bounds the run (each target gets its share of it); a progress line after every 500
examples of a target tells what ran even when the run is cut short.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests" / "fuzz"), str(HERE.parent / "src")]

CHUNK = 500  # examples of one Hypothesis run (then a progress line)
# Share of the examples per target (cheap targets get more)
WEIGHTS = {
    "markers": 40,
    "export_import": 20,
    "history_rows": 8,
    "run_record": 8,
    "xml_loader": 10,
    "yaml_loader": 7,
    "system_loader": 7,
}


def run_target(
    job: tuple[str, int, int, str, float],
) -> tuple[str, int, dict[str, tuple[int, str]], float]:
    """(name, examples run, {finding: (count, first input)}, seconds) of one target: Hypothesis runs
    of CHUNK examples (each its own seed) until `examples` ran or `budget` seconds passed; a
    progress line after each, so a run cut short still tells what it did."""
    name, examples, seed, scratch, budget = job
    deadline = time.time() + budget
    from fuzz_targets import is_finding, make_targets
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    target = make_targets(Path(scratch) / name)[name]
    findings: dict[str, tuple[int, str]] = {}
    count = 0
    quiet = io.StringIO()

    def one(data) -> None:
        nonlocal count
        count += 1
        quiet.seek(0)
        quiet.truncate()
        try:
            with contextlib.redirect_stderr(quiet):  # the loaders' warnings, thousands of them
                target.run(data)
        except Exception as exc:  # noqa: BLE001 - what is not a caramel error is counted, not raised
            if is_finding(exc):
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                key = (
                    f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}: "
                    f"{str(exc)[:120]}"
                )
                seen, first = findings.get(key, (0, repr(data)[:300]))
                findings[key] = (seen + 1, first)

    start = time.monotonic()
    chunk = 0
    while count < examples and time.time() < deadline:
        size = min(CHUNK, examples - count)
        run = with_seed(seed * 100_000 + chunk)(
            settings(
                max_examples=size,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )(given(target.strategy)(one))
        )
        run()
        chunk += 1
        print(
            f"progress {name} {count} examples {sum(c for c, _ in findings.values())} findings "
            f"{time.monotonic() - start:.0f} s",
            flush=True,
        )
    return name, count, findings, time.monotonic() - start


def merged(results: list) -> list:
    """One line per target: the shards of a target added up (examples, findings; seconds: the
    longest)."""
    out: dict[str, tuple[str, int, dict, float]] = {}
    for name, count, findings, seconds in results:
        _n, total, known, longest = out.get(name, (name, 0, {}, 0.0))
        for key, (times, first) in findings.items():
            known[key] = (known.get(key, (0, first))[0] + times, known.get(key, (0, first))[1])
        out[name] = (name, total + count, known, max(longest, seconds))
    return list(out.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples", type=int, default=100_000, help="examples in total over the targets"
    )
    parser.add_argument(
        "--target", action="append", choices=sorted(WEIGHTS), help="only these targets"
    )
    parser.add_argument("--jobs", type=int, default=1, help="targets run at once (processes)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--shards", type=int, default=1, help="split each target into this many jobs (seeds)"
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=0,
        help="the whole run's time, shared by the targets: each stops after its share (0: "
        "no limit)",
    )
    args = parser.parse_args()
    names = args.target or list(WEIGHTS)
    total = sum(WEIGHTS[n] for n in names)
    with tempfile.TemporaryDirectory(prefix="caramel-fuzz-") as scratch:
        count = len(names) * args.shards
        budget = args.minutes * 60 * args.jobs / count if args.minutes else float("inf")
        jobs = [
            (
                n,
                max(1, args.examples * WEIGHTS[n] // total // args.shards),
                args.seed * 1000 + shard,
                f"{scratch}/{shard}",
                budget,
            )
            for n in names
            for shard in range(args.shards)
        ]
        start = time.monotonic()
        if args.jobs > 1:
            with multiprocessing.Pool(args.jobs) as pool:
                results = pool.map(run_target, jobs, chunksize=1)
        else:
            results = [run_target(job) for job in jobs]
        wall = time.monotonic() - start
    results = merged(results)
    print(f"{'target':<15} {'examples':>9} {'findings':>9} {'seconds':>8}")
    for name, count, findings, seconds in results:
        print(f"{name:<15} {count:>9} {sum(c for c, _ in findings.values()):>9} {seconds:>8.1f}")
    print(
        f"{'total':<15} {sum(r[1] for r in results):>9} "
        f"{sum(c for r in results for c, _ in r[2].values()):>9} {wall:>8.1f}  (wall, "
        f"{args.jobs} job(s))"
    )
    for name, _count, findings, _seconds in results:
        for key, (count, first) in findings.items():
            print(f"\n{name}: {count} x {key}\n  first input: {first}")
    return 1 if any(r[2] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
