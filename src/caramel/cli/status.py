"""`bench status [DIR] [-i ID|last]`: workpackages per step and state, and why some failed or wait."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from caramel.cli.common import add_run_reader, open_run
from caramel.vocabulary import STATES, WpState

if TYPE_CHECKING:
    from caramel.engine.settings import Summary

MAX_LISTED = 20  # failed / waiting workpackages listed by reason before "... and N more"


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_run_reader(sub, "status", "count workpackages per step and state; show failures", ("table", "json"))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_run(args) as (run_dir, store):
        info = store.info()
        counts = store.counts()
        rows = store.workpackages()
    failed = [(wp.id, wp.step, wp.reason) for wp in rows if wp.state == WpState.FAILED]
    waiting = [(wp.id, wp.step, wp.reason) for wp in rows if wp.state == WpState.WAITING]
    if args.format == "json":
        print(json.dumps({"run": info.run_id, "benchmark": info.benchmark, "dir": run_dir, "steps": counts,
                          "workpackages": [{"id": wp.id, "step": wp.step, "state": wp.state, "reason": wp.reason,
                                            "exit_code": wp.exit_code, "attempt": wp.attempt, "job_id": wp.job_id}
                                           for wp in rows]}))
        return 0
    print(f"run {info.run_id:06d} of {info.benchmark}: {run_dir}")
    print_counts(counts)
    print_reasons(failed, waiting)
    return 0


def print_counts(counts: dict[str, dict[str, int]]) -> None:
    header = ["step", "all", *STATES]
    table = [header] + [[step, str(sum(c.values()))] + [str(c.get(s, 0)) for s in STATES]
                        for step, c in counts.items()]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        print("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths, strict=True))))


def print_reasons(failed: list[tuple[int, str, str]], waiting: list[tuple[int, str, str]]) -> None:
    for title, items in (("failed", failed), ("waiting", waiting)):
        if not items:
            continue
        print(f"{title}:")
        for wp_id, step, reason in items[:MAX_LISTED]:
            print(f"  {wp_id} ({step}): {reason}")
        if len(items) > MAX_LISTED:
            print(f"  ... and {len(items) - MAX_LISTED} more (bench status --format json lists all)")


def print_summary(summary: Summary) -> None:
    """What `bench run` / `bench continue` print at the end."""
    total = {s: sum(c.get(s, 0) for c in summary.counts.values()) for s in STATES}
    parts = ", ".join(f"{n} {s}" for s, n in total.items() if n)
    print(f"run {summary.run_id:06d} of {summary.benchmark}: {parts or 'no workpackages'}")
    print(f"  dir: {summary.run_dir}")
    if summary.failed or summary.waiting or total["cancelled"] or total["open"]:
        print_counts(summary.counts)
        print_reasons(summary.failed, summary.waiting)
    if summary.waiting:
        print(f"  go on with: bench continue {summary.run_dir}")
