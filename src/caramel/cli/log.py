"""`bench log [DIR] [-i ID|last] [-w WP ...]`: the commands a run ran, their exit codes and
times."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import add_run_args, read_run

if TYPE_CHECKING:
    from caramel.stages.state.rows import CommandRow, EventRow
    from caramel.stages.state.store import Store


COMMAND = "log"  # `bench log` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("log", help="the commands run: workpackage, exit code, start, duration")
    add_run_args(parser)
    parser.add_argument(
        "-w",
        "--workpackage",
        type=int,
        nargs="+",
        action="extend",
        default=[],
        metavar="WP",
        help="only these workpackages",
    )
    parser.add_argument("--failed", action="store_true", help="only commands that did not exit 0")
    parser.add_argument("--events", action="store_true", help="state changes instead of commands")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.set_defaults(func=run)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


@dataclass(frozen=True)
class LogOptions:
    dir: str | None = None
    id: str | None = None
    workpackages: tuple[int, ...] = ()  # -w: only these (none: all)
    failed: bool = False
    events: bool = False
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LogOptions:
        return cls(
            dir=args.dir,
            id=args.id,
            workpackages=tuple(args.workpackage),
            failed=args.failed,
            events=args.events,
            json=args.format == "json",
        )


def run(args: argparse.Namespace) -> int:
    return log(LogOptions.from_args(args), sys.stdout)


def log(options: LogOptions, out: TextIO) -> int:
    """`bench log`: each command the run ran (or, with events, each state change) on `out`."""
    wanted = set(options.workpackages)
    with read_run(options.dir, options.id) as (_run_dir, store):
        steps = _steps(store)
        if options.events:
            _print_events(store.events(), steps, wanted, out)
            return 0
        rows = [r for r in store.commands() if _selected(r, wanted, options.failed)]
    write = _write_json if options.json else _write_text
    write(rows, steps, out)
    return 0


def _steps(store: Store) -> dict[int | None, str]:
    """Workpackage id -> the step it is of."""
    return {wp.id: wp.step for wp in store.workpackages()}


def _print_events(
    events: list[EventRow], steps: dict[int | None, str], wanted: set[int], out: TextIO
) -> None:
    """One line per state change (those of -w's workpackages): when, which workpackage (or the
    run), what, and its message."""
    for t, wp, kind, message in events:
        if wanted and wp not in wanted:
            continue
        note = f": {message}" if message else ""
        out.write(f"{_when(t)}  {_who(wp, steps)}  {kind}{note}\n")


def _who(wp: int | None, steps: dict[int | None, str]) -> str:
    """Whom a state change concerns: a workpackage and its step, or the run."""
    return f"{wp} ({steps.get(wp, '')})" if wp is not None else "run"


def _selected(row: CommandRow, wanted: set[int], failed_only: bool) -> bool:
    """Whether -w and --failed keep the command."""
    if wanted and row.wp not in wanted:
        return False
    return not failed_only or row.exit_code not in (0,)


def _write_json(rows: list[CommandRow], steps: dict[int | None, str], out: TextIO) -> None:
    out.write(json.dumps([_command_json(r, steps) for r in rows]) + "\n")


def _write_text(rows: list[CommandRow], steps: dict[int | None, str], out: TextIO) -> None:
    for r in rows:
        _print_command(r, steps, out)


def _command_json(r: CommandRow, steps: dict[int | None, str]) -> dict[str, object]:
    """A command as `--format json` gives it."""
    return {
        "wp": r.wp,
        "step": steps.get(r.wp),
        "attempt": r.attempt,
        "cycle": r.cycle,
        "do": r.op + 1,
        "kind": r.role,
        "command": r.command,
        "cwd": r.cwd,
        "exit_code": r.exit_code,
        "started": r.started,
        "ended": r.ended,
    }


def _print_command(r: CommandRow, steps: dict[int | None, str], out: TextIO) -> None:
    """A command's line (when, workpackage, attempt, cycle, do, exit code, duration), then its
    lines of shell."""
    code = "?" if r.exit_code is None else str(r.exit_code)
    where = f"{r.wp} {steps.get(r.wp, '')}{_repetition(r)}"
    role = "" if r.role == "do" else f" [{r.role}]"
    out.write(f"{_when(r.started)}  {where}  do {r.op + 1}{role}  exit {code}  {_took(r)}\n")
    out.writelines(f"    $ {line}\n" for line in r.command.splitlines() or [""])


def _repetition(r: CommandRow) -> str:
    """Which attempt (after the first) and which cycle (after the first) the command belongs to."""
    attempt = f" attempt {r.attempt}" if r.attempt > 1 else ""
    return attempt + (f" cycle {r.cycle}" if r.cycle else "")


def _took(r: CommandRow) -> str:
    """How long the command ran; - while unknown."""
    return f"{r.ended - r.started:.3f}s" if r.started and r.ended else "-"
