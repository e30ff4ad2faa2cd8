"""`bench baseline set NAME [DIR] -i ID`: name a run as the baseline later runs compare with."""

from __future__ import annotations

import argparse
import sys

from caramel.cli.common import add_run_args, resolve_run


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("baseline", help="name a run as a baseline (bench compare --baseline NAME)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="set")
    setter = actions.add_parser("set", help="name the run NAME")
    setter.add_argument("name", metavar="NAME")
    add_run_args(setter)
    setter.add_argument("--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.cli.compare import imported
    from caramel.history.store import History

    run_dir = resolve_run(args)
    with History.open(args.history) as history:
        key = imported(history, run_dir)
        history.set_baseline(args.name, key)
        record, figures = history.run(key), len(history.metrics(key))
    benchmark = f" (benchmark {record.benchmark}, {figures} figure(s))" if record is not None else ""
    print(f"baseline '{args.name}': {run_dir}{benchmark}")
    if not figures:
        from caramel.cli.compare import NO_FIGURE_HINT

        print(f"warning: the run has no figure, so nothing can be compared with it; {NO_FIGURE_HINT}", file=sys.stderr)
    return 0
