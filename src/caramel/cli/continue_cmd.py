"""`bench continue [DIR] [-i ID|last]`: go on with a run (after async steps, a crash or a remove)."""

from __future__ import annotations

import argparse

from caramel.cli.common import add_run_args, resolve_run
from caramel.cli.status import print_summary
from caramel.engine.session import continue_run


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("continue", help="check waiting workpackages and run what is left")
    add_run_args(parser)
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="fail workpackages waiting longer than this for their done file (kept for the run)")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="if another bench works on the run, wait this long for it (default: say it is busy)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    summary = continue_run(resolve_run(args), timeout=args.timeout, quiet=args.quiet, wait_lock=args.wait)
    print_summary(summary)
    return summary.exit_code
