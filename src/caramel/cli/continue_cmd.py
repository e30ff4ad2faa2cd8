"""`bench continue [DIR] [-i ID|last]`: go on with a run (after async steps, a crash or a remove)."""

from __future__ import annotations

import argparse

from caramel.cli.common import add_run_args, resolve_run
from caramel.cli.status import print_summary
from caramel.engine.follow import Pace, follow
from caramel.engine.session import continue_run
from caramel.engine.settings import Summary
from caramel.errors import RunError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("continue", help="check waiting workpackages and run what is left")
    add_run_args(parser)
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="fail workpackages waiting longer than this for their done file (kept for the run)")
    parser.add_argument("--wait", action="store_true",
                        help="follow the run to its end: poll the scheduler (adaptive pace) and run what becomes ready")
    parser.add_argument("--interval", type=float, metavar="SECONDS",
                        help="with --wait: poll every SECONDS instead of the adaptive pace (1 s growing to 60 s)")
    parser.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                        help="if another bench works on the run, wait this long for it (default: say it is busy)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = resolve_run(args)
    if args.interval is not None and args.interval <= 0:
        raise RunError(f"--interval {args.interval:g}: expected a number of seconds above 0")

    def poll() -> Summary:
        return continue_run(run_dir, timeout=args.timeout, quiet=args.quiet or args.wait, wait_lock=args.lock_wait)

    summary = follow(poll, Pace(fixed=args.interval), quiet=args.quiet) if args.wait else poll()
    print_summary(summary)
    return summary.exit_code
