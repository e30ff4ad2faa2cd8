"""`bench history changes`: change points in every series of the history, their likely causes and
the events they make (consumers/history/changes.py; docs/history.md, "Change points")."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, TextIO, TypeVar

from caramel.errors import RunError

if TYPE_CHECKING:
    from caramel.consumers.history.changes import ChangePoint, Event
    from caramel.consumers.history.changes_read import Found

    Shown = TypeVar("Shown", ChangePoint, Event)


def add_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    changes = actions.add_parser(
        "changes",
        help="change points in every series (benchmark x system x configuration x figure), "
        "their size, significance and likely causes; events across series",
    )
    changes.add_argument("--benchmark", metavar="NAME", default="", help="only this benchmark")
    changes.add_argument("--system", metavar="NAME", default="", help="only this system")
    changes.add_argument("--figure", metavar="NAME", default="", help="only figures of this name")
    changes.add_argument(
        "--since",
        metavar="last|RUN|DATE",
        default="",
        help="only changes whose first run after started then or later (last: the newest run)",
    )
    changes.add_argument(
        "--threshold",
        type=_percent,
        default=None,
        metavar="PCT",
        help="the band of no change in %% (as bench compare's): a change whose interval lies "
        "within it is none (default 2)",
    )
    changes.add_argument(
        "--fail-on",
        choices=("regression", "any"),
        default=None,
        help="exit 1 when a regression (or any change) is among those shown (for CI)",
    )
    changes.add_argument("--format", choices=("text", "json"), default="text")
    changes.add_argument(
        "--history",
        metavar="FILE|URL",
        help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)",
    )


def _percent(text: str) -> float:
    """--threshold's value: a percentage of 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected a percentage of 0 or more (2, 0.5), not {text!r}"
        )
    return value


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from caramel.consumers.history import changes_read
    from caramel.consumers.history.store import History

    with History.open(args.history) as history:
        found = changes_read.read(
            history.db, args.benchmark, args.system, args.figure, args.threshold
        )
    since = _since(found, args.since)
    shown = _from(found, found.changes, since)
    events = _from(found, found.events, since)
    _to_sinks(found)
    if args.format == "json":
        out.write(json.dumps(_changes_json(found, shown, events), indent=1) + "\n")
    else:
        _print_text(found, shown, events, out)
    failing = changes_read.failing(found, since, args.fail_on) if args.fail_on else []
    return 1 if failing else 0


def _since(found: Found, since: str) -> float:
    """When the run --since names started (0: all); an error naming what is wrong with it."""
    from caramel.consumers.history import changes_read

    try:
        return changes_read.since_run(found, since)
    except ValueError as exc:
        raise RunError(str(exc), hint="bench history list shows the run keys") from None


def _from(found: Found, items: list[Shown], since: float) -> list[Shown]:
    """The change points or events of runs that started at `since` or later."""
    return [x for x in items if found.started.get(x.run_after, 0) >= since]


def _changes_json(found: Found, shown: list[ChangePoint], events: list[Event]) -> dict[str, object]:
    from caramel.consumers.history import changes_read

    after = {e.run_after for e in events}
    return {
        "changes": [changes_read.as_json(c) for c in shown],
        "events": [d for d in changes_read.documents(found) if d["run_after"] in after],
        "too_few_runs": [list(s) for s in found.short],
    }


def _when(found: Found, run_key: str) -> str:
    started = found.started.get(run_key, 0.0)
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else run_key


def _print_text(found: Found, shown: list[ChangePoint], events: list[Event], out: TextIO) -> None:
    if not shown:
        out.write("no change point")
    for event in events:
        if len(event.changes) > 1:
            _print_event(found, event, out)
    for change in shown:
        _print_change(found, change, out)
    if not shown:
        out.write(f" in {len(found.runs)} run(s)\n")
    if found.short:
        out.write(
            f"{len(found.short)} series with too few runs to judge (fewer than 8): run them "
            "again to find their changes\n"
        )


def _print_event(found: Found, event: Event, out: TextIO) -> None:
    """A change of several series after one run: when, its likely causes, how many series of
    how many benchmarks, which ways and how large."""
    why = f" after {'; '.join(event.causes)}" if event.causes else ""
    sizes = [abs(c.ratio - 1) * 100 for c in event.changes]
    benchmarks = len({c.series[0] for c in event.changes})
    kinds = "/".join(sorted({c.kind.value for c in event.changes}))
    out.write(
        f"event {_when(found, event.run_after)}{why}: {len(event.changes)} series of "
        f"{benchmarks} benchmark(s) {kinds} {min(sizes):.0f}-{max(sizes):.0f} %\n"
    )


def _print_change(found: Found, change: ChangePoint, out: TextIO) -> None:
    """A change point: when, which way, its size with its interval and p-value, the series, the
    runs either side and its likely causes."""
    from caramel.consumers.history.changes_read import series_label

    pct, low, high = ((x - 1) * 100 for x in (change.ratio, change.low, change.high))
    out.write(
        f"{_when(found, change.run_after)} {change.kind.value} {pct:+.1f} % "
        f"[{low:+.1f} %, {high:+.1f} %] p={change.p_value:.1g} "
        f"{series_label(change.series)} [{change.unit or 'no unit'}] "
        f"({change.run_before} -> {change.run_after})\n"
    )
    for cause in change.causes:
        out.write(f"    likely cause: {cause}\n")


def _to_sinks(found: Found) -> None:
    """The events to every configured sink (a sink down: a warning, never a failure)."""
    if not found.events:
        return
    try:
        from caramel.consumers.history.changes_read import documents
        from caramel.consumers.history.settings import load_settings
        from caramel.consumers.history.sinks import enqueue, flush

        sinks = load_settings().sinks
        if sinks:
            enqueue(sinks, documents(found))
            flush(sinks)
    except Exception as exc:  # noqa: BLE001 - a sink is a copy: never fail the command
        print(f"warning: the change events were not sent to the sinks: {exc}", file=sys.stderr)
