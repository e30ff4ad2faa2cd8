"""`bench history list|remove|copy|push`: inspect and repair the history, move it between
engines (an SQLite file, a PostgreSQL URL), deliver runs kept locally while the server was away."""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO

from caramel.errors import RunError, did_you_mean

if TYPE_CHECKING:  # the history's modules: imported by the command, not by `bench --help`
    from caramel.consumers.history.store import History, RunRecord

COMMAND = "history"  # `bench history` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "history", help="list the runs in the history, remove one, copy it, push kept runs"
    )
    actions = parser.add_subparsers(
        dest="action", required=True, metavar="list|changes|remove|copy|push"
    )
    lister = actions.add_parser("list", help="one line per run: key, benchmark, start, figures")
    lister.add_argument("--benchmark", metavar="NAME", help="only runs of this benchmark")
    lister.add_argument(
        "--history",
        metavar="FILE|URL",
        help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)",
    )
    from caramel.cli.history_changes import add_parser as add_changes

    add_changes(actions)
    remover = actions.add_parser(
        "remove", help="remove a run (its figures and the baselines naming it)"
    )
    remover.add_argument(
        "run_key", metavar="RUN", help="the run's key, as bench history list prints it"
    )
    remover.add_argument(
        "--history",
        metavar="FILE|URL",
        help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)",
    )
    copier = actions.add_parser(
        "copy", help="copy every run of one history into another (file or postgresql:// URL)"
    )
    copier.add_argument(
        "source", metavar="SRC", help="the history to read: a file or a postgresql:// URL"
    )
    copier.add_argument("destination", metavar="DST", help="the history to add to (made if new)")
    pusher = actions.add_parser(
        "push",
        help="deliver the runs kept locally while the history server was away, "
        "and the rows waiting for the sinks",
    )
    pusher.add_argument(
        "--history", metavar="URL", help="the history to deliver to (default $CARAMEL_HISTORY)"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class HistoryOptions:
    action: Literal["list", "remove", "copy", "push"]
    history: str | None = None
    benchmark: str | None = None  # list: only runs of this benchmark
    run_key: str | None = None  # remove
    source: str | None = None  # copy
    destination: str | None = None  # copy

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> HistoryOptions:
        if args.action == "copy":
            return cls("copy", source=args.source, destination=args.destination)
        if args.action == "remove":
            return cls("remove", history=args.history, run_key=args.run_key)
        if args.action == "push":
            return cls("push", history=args.history)
        return cls("list", history=args.history, benchmark=args.benchmark)


def run(args: argparse.Namespace) -> int:
    if args.action == "changes":
        from caramel.cli import history_changes

        return history_changes.run(args)
    return history_command(HistoryOptions.from_args(args), sys.stdout)


def history_command(options: HistoryOptions, out: TextIO) -> int:
    """`bench history list|remove|copy|push`."""
    from caramel.consumers.history.store import History

    if options.action == "copy":
        assert options.source is not None and options.destination is not None
        return copy(options.source, options.destination, out)
    if options.action == "push":
        return push(options.history, out)
    with History.open(options.history) as history:
        if options.action == "remove":
            assert options.run_key is not None
            return _remove(history, options.run_key, out)
        rows = _listing(history, options.benchmark)
    if not rows:
        print(f"no runs in {history.path}", file=sys.stderr)
        return 0
    from caramel.cli.tables import print_table

    print_table(out, ["run", "benchmark", "started", "figures"], rows, header=False)
    return 0


def _listing(history: History, benchmark: str | None) -> list[tuple[str, str, str, str]]:
    """`bench history list`: per run, its key, benchmark, start and how many figures (with its
    failed rows and values that are not finite numbers)."""
    failures = history.failures()
    rows = []
    for record, figures, flagged in history.listing(benchmark):
        failed = len(failures.get(record.run_key, ()))  # its rows' reasons are no figures
        rows.append(
            (record.run_key, record.benchmark, _started(record), _figures(figures, failed, flagged))
        )
    return rows


def _started(record: RunRecord) -> str:
    if not record.started:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(record.started))


def _figures(figures: int, failed: int, flagged: bool) -> str:
    """`4 figure(s), 1 failed row(s)`, and whether some values are not finite numbers."""
    failed_rows = f", {failed} failed row(s)" if failed else ""
    flag = "  (has values that are not finite numbers)" if flagged else ""
    return f"{figures} figure(s){failed_rows}{flag}"


def _remove(history: History, run_key: str, out: TextIO) -> int:
    if history.run(run_key) is None:
        keys = [r.run_key for r in history.runs()]
        raise RunError(
            f"no run {run_key!r} in the history {history.path}",
            hint=did_you_mean(run_key, keys) or "bench history list shows the runs' keys",
        )
    removed = history.remove(run_key)
    out.write(f"removed run {run_key} ({removed} figure(s)) from {history.path}\n")
    return 0


def copy(source: str, destination: str, out: TextIO) -> int:
    from caramel.consumers.history.engine import is_url
    from caramel.consumers.history.store import History
    from caramel.consumers.history.transfer import copy_runs

    if not is_url(source) and not os.path.isfile(source):
        raise RunError(
            f"{source}: no such history file", hint="give a history file or a postgresql:// URL"
        )
    with History(source) as src, History(destination) as dst:
        if src.path == dst.path:
            raise RunError(f"{src.path} is both the source and the destination")
        done = copy_runs(src, dst)
        out.write(
            f"{done.runs} new run(s), {done.figures} new figure(s), "
            f"{done.baselines} baseline(s) copied from "
            f"{src.path} to {dst.path}\n"
        )
    for why in done.skipped:
        print(f"warning: not copied: {why}", file=sys.stderr)
    if done.skipped:
        print(
            f"error: {len(done.skipped)} run(s) of {src.path} were not copied (above); "
            "the others were",
            file=sys.stderr,
        )
        return 1
    return 0


def push(history: str | None, out: TextIO) -> int:
    """Deliver the spool of the history (default: $CARAMEL_HISTORY), then the sinks' queue; the
    spools of other histories are named with the command that delivers them."""
    from caramel import redact
    from caramel.consumers.history.settings import load_settings
    from caramel.consumers.history.sinks import flush
    from caramel.consumers.history.spool import push as deliver
    from caramel.consumers.history.store import default_path

    target = history or default_path()
    done = deliver(target)
    if done is not None:
        out.write(
            f"{done.runs} run(s) ({done.figures} figure(s)) delivered to {redact.url(target)}\n"
        )
    _note_other_spools(redact.url(target))
    sinks = load_settings().sinks
    sent = flush(sinks)
    if sent:
        out.write(f"{sent} row(s) sent to the sinks\n")
    if done is None and not sent:
        print(f"nothing to push for {redact.url(target)}", file=sys.stderr)
    return 0


def _note_other_spools(target: str) -> None:
    """A note per other history with runs waiting in its spool, with the command that delivers
    them (`target`: this one, its password left out)."""
    from caramel.consumers.history.spool import pending

    for other in pending():
        if other.target != target and other.runs:
            print(
                f"note: {other.runs} run(s) wait for {other.target} in {other.path}: "
                f"bench history push --history {other.target} (with its password)",
                file=sys.stderr,
            )
