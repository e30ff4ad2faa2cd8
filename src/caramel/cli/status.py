"""`bench status [DIR] [-i ID|last]`: workpackages per step and state, and why some failed or
wait."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from caramel.cli.common import add_run_reader, read_run
from caramel.cli.tables import RIGHT, Column, print_table
from caramel.vocabulary import STATES, WpState

if TYPE_CHECKING:
    from caramel.stages.engine.settings import Summary
    from caramel.stages.state.rows import RunInfo, WpRow

MAX_LISTED = 20  # failed / waiting workpackages listed by reason before "... and N more"


COMMAND = "status"  # `bench status` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_run_reader(
        sub, "status", "count workpackages per step and state; show failures", ("table", "json")
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class StatusOptions:
    dir: str | None = None
    id: str | None = None
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> StatusOptions:
        return cls(dir=args.dir, id=args.id, json=args.format == "json")


def run(args: argparse.Namespace) -> int:
    return status(StatusOptions.from_args(args), sys.stdout)


def status(options: StatusOptions, out: TextIO) -> int:
    """`bench status`: the run's workpackages counted per step and state, and why any failed or
    waits."""
    with read_run(options.dir, options.id) as (run_dir, store):
        info = store.info()
        counts = store.counts()
        rows = store.workpackages()
    if options.json:
        out.write(json.dumps(_status_json(info, run_dir, counts, rows)) + "\n")
        return 0
    out.write(f"run {info.run_id:06d} of {info.benchmark}: {run_dir}\n")
    auto = info.settings.get("repeat_auto")
    if auto:  # engine.rounds records the repeats a --repeat auto run made, and why no more
        out.write(f"  repeats: {_repeats_made(auto)}\n")
    print_counts(counts, out)
    print_reasons(_reasons(rows, WpState.FAILED), _reasons(rows, WpState.WAITING), out)
    return 0


def _status_json(
    info: RunInfo, run_dir: str, counts: dict[str, dict[str, int]], rows: list[WpRow]
) -> dict[str, object]:
    return {
        "run": info.run_id,
        "benchmark": info.benchmark,
        "dir": run_dir,
        "steps": counts,
        "repeat_auto": info.settings.get("repeat_auto"),
        "workpackages": [
            {
                "id": wp.id,
                "step": wp.step,
                "state": wp.state,
                "reason": wp.reason,
                "exit_code": wp.exit_code,
                "attempt": wp.attempt,
                "job_id": wp.job_id,
            }
            for wp in rows
        ],
    }


def _repeats_made(auto: dict[str, Any]) -> str:
    """The repeats a --repeat auto run made and why it stopped; or that it goes on."""
    if "stopped" not in auto:
        return "--repeat auto: not finished (bench continue goes on)"
    plural = "s" if auto["repeats"] != 1 else ""
    return f"{auto['repeats']} repeat{plural} (--repeat auto): {auto['stopped']}"


def _reasons(rows: list[WpRow], state: WpState) -> list[tuple[int, str, str]]:
    """(id, step, reason) of the workpackages in `state`."""
    return [(wp.id, wp.step, wp.reason) for wp in rows if wp.state == state]


def print_counts(counts: dict[str, dict[str, int]], out: TextIO | None = None) -> None:
    columns = [Column("step"), Column("all", RIGHT), *(Column(state, RIGHT) for state in STATES)]
    rows = [[step, sum(c.values()), *(c.get(s, 0) for s in STATES)] for step, c in counts.items()]
    print_table(out or sys.stdout, columns, rows, indent=2)


def print_reasons(
    failed: list[tuple[int, str, str]],
    waiting: list[tuple[int, str, str]],
    out: TextIO | None = None,
) -> None:
    out = out or sys.stdout
    for title, items in (("failed", failed), ("waiting", waiting)):
        if not items:
            continue
        out.write(f"{title}:\n")
        for wp_id, step, reason in items[:MAX_LISTED]:
            out.write(f"  {wp_id} ({step}): {reason}\n")
        if len(items) > MAX_LISTED:
            out.write(
                f"  ... and {len(items) - MAX_LISTED} more (bench status --format json lists all)\n"
            )


def print_summary(summary: Summary, out: TextIO | None = None, again: str | None = None) -> None:
    """What `bench run` / `bench continue` print at the end. `again` names the run from where the
    user is (`-i last`, or the DIR and -i they gave): then the next commands follow, as JUBE ends
    a run with its `jube continue` / `jube result` lines (jube/benchmark.py, Benchmark.run)."""
    out = out or sys.stdout
    total = {s: sum(c.get(s, 0) for c in summary.counts.values()) for s in STATES}
    out.write(f"run {summary.run_id:06d} of {summary.benchmark}: {_state_counts(total)}\n")
    out.write(f"  dir: {summary.run_dir}\n")
    if summary.repeats:
        out.write(f"  repeats: {summary.repeats}\n")
    if _not_all_done(summary, total):
        print_counts(summary.counts, out)
        print_reasons(summary.failed, summary.waiting, out)
    _print_next_commands(summary, total, again, out)
    out.flush()


def _state_counts(total: dict[str, int]) -> str:
    """`4 done, 2 failed`: the states that have workpackages."""
    return ", ".join(f"{n} {s}" for s, n in total.items() if n) or "no workpackages"


def _not_all_done(summary: Summary, total: dict[str, int]) -> bool:
    """Whether a workpackage failed, waits, was cancelled or is still open: then the counts per
    step and the reasons follow."""
    return bool(summary.failed or summary.waiting or total["cancelled"] or total["open"])


def _print_next_commands(
    summary: Summary, total: dict[str, int], again: str | None, out: TextIO
) -> None:
    """`bench continue` where the run can go on, and `bench result`, naming the run by `again`;
    without `again`, only `bench continue` of the waiting run's folder."""
    if again is None:
        if summary.waiting:
            out.write(f"  go on with: bench continue {summary.run_dir}\n")
        return
    # JUBE names `continue` while a workpackage is not done; caramel's continue only goes on
    # with open and waiting ones (a failed one stays failed), so only then
    if summary.waiting or total["open"]:
        out.write(f"  go on with: bench continue {again}\n")
    out.write(f"  its table: bench result {again}\n")
