"""`bench continue [DIR] [-i ID|last]`: go on with a run (after async steps, a crash or a
remove)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import add_run_args
from caramel.cli.jube_flags import AfterRun, add_after_args
from caramel.cli.spellings import add_old_spelling
from caramel.cli.status import print_summary
from caramel.errors import RunError

if TYPE_CHECKING:
    from caramel.stages.engine.rounds import GoOn
    from caramel.stages.engine.settings import Summary


COMMAND = "continue"  # `bench continue` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("continue", help="check waiting workpackages and run what is left")
    add_run_args(parser)
    parser.add_argument(
        "--wait-limit",
        dest="timeout",
        type=float,
        metavar="SECONDS",
        help="fail workpackages waiting longer than this for their done file (kept for the run)",
    )
    add_old_spelling(parser, "--timeout", "--wait-limit")
    parser.add_argument(
        "--wait",
        action="store_true",
        help=(
            "follow the run to its end: "
            "poll the scheduler (adaptive pace) and run what becomes ready"
        ),
    )
    parser.add_argument(
        "--interval",
        type=float,
        metavar="SECONDS",
        help="with --wait: poll every SECONDS instead of the adaptive pace (1 s growing to 60 s)",
    )
    parser.add_argument(
        "--lock-wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if another bench works on the run, wait this long for it (default: say it is busy)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    add_after_args(parser)
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class ContinueOptions:
    dir: str | None = None
    id: str | None = None
    timeout: float | None = None
    wait: bool = False
    interval: float | None = None  # with wait: a fixed pace instead of the adaptive one
    lock_wait: float = 0.0
    quiet: bool = False
    after: AfterRun = AfterRun()  # JUBE's -a/-r: analyse, or print the tables, when it stops
    exit_on_error: bool = False  # JUBE's -e: no workpackage starts after one failed

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ContinueOptions:
        if args.interval is not None and args.interval <= 0:
            raise RunError(f"--interval {args.interval:g}: expected a number of seconds above 0")
        return cls(
            dir=args.dir,
            id=args.id,
            timeout=args.timeout,
            wait=args.wait,
            interval=args.interval,
            lock_wait=args.lock_wait,
            quiet=args.quiet,
            after=AfterRun.from_args(args),
            exit_on_error=args.exit_on_error,
        )


def run(args: argparse.Namespace) -> int:
    return continue_command(ContinueOptions.from_args(args), sys.stdout)


def continue_command(options: ContinueOptions, out: TextIO) -> int:
    """`bench continue`: the run goes on (and, with wait, is followed to its end); its summary on
    `out`."""
    # the engine, imported here: `bench --help` lists this command without it
    from caramel.stages.engine.follow import Pace, follow, job_logs
    from caramel.stages.engine.session import continue_run
    from caramel.stages.state.registry import resolve

    run_dir = resolve(options.dir, options.id)
    go_on = auto_judge(run_dir, None if options.quiet else out)

    def poll() -> Summary:
        return continue_run(
            run_dir,
            timeout=options.timeout,
            quiet=options.quiet or options.wait,
            wait_lock=options.lock_wait,
            go_on=go_on,
            stop_after_failure=options.exit_on_error,
        )

    summary = (
        follow(poll, Pace(fixed=options.interval), options.quiet, logs=_logs(run_dir, job_logs))
        if options.wait
        else poll()
    )
    print_summary(summary, out, again=_again(options))
    return max(summary.exit_code, options.after(run_dir, out))


def _logs(
    run_dir: str, job_logs: Callable[[str], Callable[[Summary], list[str]]]
) -> Callable[[Summary], list[str]] | None:
    """The waiting jobs' progress for --wait's poll lines; None where the run cannot be read (the
    poll says what is wrong)."""
    from caramel.stages.state.store import is_run_dir

    return job_logs(run_dir) if is_run_dir(run_dir) else None


def _again(options: ContinueOptions) -> str:
    """The words that name this run again, as the user named it (DIR and -i, else -i last)."""
    import shlex

    words = [shlex.quote(options.dir)] if options.dir else []
    return " ".join([*words, "-i", shlex.quote(options.id or "last")])


def auto_judge(run_dir: str, out: TextIO | None) -> GoOn | None:
    """The judge of a `bench run --repeat auto` run that has not stopped yet (its rule is stored
    with the run), so that it goes on a repeat at a time; None for any other run. The time limit
    counts from this bench's start."""
    from caramel.stages.engine.rounds import SETTING, AutoRepeat
    from caramel.stages.state.store import Store, db_path, is_run_dir

    if not is_run_dir(run_dir):
        return None  # continue_run says what is wrong
    store = Store(db_path(run_dir), readonly=True)
    try:
        rule = store.info().settings.get(SETTING)
    finally:
        store.close()
    if not rule or "stopped" in rule:
        return None
    from caramel.stages.report.autorepeat import Judge

    return Judge(AutoRepeat.from_dict(rule), out)
