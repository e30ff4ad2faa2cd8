"""`bench history list` and `bench history remove RUN`: inspect and repair the history database."""

from __future__ import annotations

import argparse
import sys
import time

from caramel.errors import RunError, did_you_mean


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("history", help="list the runs in the history, or remove one")
    actions = parser.add_subparsers(dest="action", required=True, metavar="list|remove")
    lister = actions.add_parser("list", help="one line per run: key, benchmark, start, figures")
    lister.add_argument("--benchmark", metavar="NAME", help="only runs of this benchmark")
    lister.add_argument("--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)")
    remover = actions.add_parser("remove", help="remove a run (its figures and the baselines naming it)")
    remover.add_argument("run_key", metavar="RUN", help="the run's key, as bench history list prints it")
    remover.add_argument("--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.history.store import History

    with History.open(args.history) as history:
        if args.action == "remove":
            if history.run(args.run_key) is None:
                keys = [r.run_key for r in history.runs()]
                raise RunError(f"no run {args.run_key!r} in the history {history.path}",
                               hint=did_you_mean(args.run_key, keys) or "bench history list shows the runs' keys")
            removed = history.remove(args.run_key)
            print(f"removed run {args.run_key} ({removed} figure(s)) from {history.path}")
            return 0
        rows = []
        for record in history.runs(args.benchmark):
            before = len(history.skipped)
            figures = len(history.metrics(record.run_key))
            flag = "  (has values that are not finite numbers)" if len(history.skipped) > before else ""
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.started)) if record.started else "-"
            rows.append((record.run_key, record.benchmark, started, f"{figures} figure(s){flag}"))
    if not rows:
        print(f"no runs in {history.path}", file=sys.stderr)
        return 0
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths + [0], strict=True)).rstrip())
    return 0
