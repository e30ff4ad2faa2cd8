"""`bench cancel [DIR] [-i ID|last]`: cancel the scheduler jobs a run waits on."""

from __future__ import annotations

import argparse

from caramel.cli.common import add_run_args, resolve_run
from caramel.engine.session import cancel_run


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("cancel", help="cancel the jobs a run waits on (through its scheduler) and mark them cancelled")
    add_run_args(parser)
    parser.add_argument("--lock-wait", type=float, default=30.0, metavar="SECONDS",
                        help="wait this long for a bench working on the run (default 30)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = resolve_run(args)
    cancelled, _ = cancel_run(run_dir, args.lock_wait)
    if not cancelled:
        print(f"run {run_dir}: no job to cancel")
        return 0
    for wp_id, job in cancelled:
        print(f"cancelled job {job} (workpackage {wp_id})")
    print(f"{len(cancelled)} job(s) cancelled; their dependants will not run")
    return 0
