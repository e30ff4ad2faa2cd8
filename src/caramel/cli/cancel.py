"""`bench cancel [DIR] [-i ID|last]`: cancel the scheduler jobs a run waits on."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from caramel.cli.common import add_run_args

COMMAND = "cancel"  # `bench cancel` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "cancel",
        help="cancel the jobs a run waits on (through its scheduler) and mark them cancelled",
    )
    add_run_args(parser)
    parser.add_argument(
        "--lock-wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="wait this long for a bench working on the run (default 30)",
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class CancelOptions:
    dir: str | None = None
    id: str | None = None
    lock_wait: float = 30.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CancelOptions:
        return cls(dir=args.dir, id=args.id, lock_wait=args.lock_wait)


def run(args: argparse.Namespace) -> int:
    return cancel(CancelOptions.from_args(args), sys.stdout)


def cancel(options: CancelOptions, out: TextIO) -> int:
    """`bench cancel`: the run's jobs cancelled through its scheduler; what was cancelled on
    `out`."""
    from caramel.stages.engine.session import cancel_run
    from caramel.stages.state.registry import resolve

    run_dir = resolve(options.dir, options.id)
    cancelled, _ = cancel_run(run_dir, options.lock_wait)
    if not cancelled:
        out.write(f"run {run_dir}: no job to cancel\n")
        return 0
    out.writelines(f"cancelled job {job} (workpackage {wp_id})\n" for wp_id, job in cancelled)
    out.write(f"{len(cancelled)} job(s) cancelled; their dependants will not run\n")
    return 0
