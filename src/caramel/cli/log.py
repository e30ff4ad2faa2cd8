"""`bench log [DIR] [-i ID|last] [-w WP ...]`: the commands a run ran, their exit codes and
times."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from caramel.cli.common import add_run_args, read_run

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
    with read_run(options.dir, options.id) as (_run_dir, store):
        steps: dict[int | None, str] = {wp.id: wp.step for wp in store.workpackages()}
        wanted = set(options.workpackages)
        if options.events:
            for t, wp, kind, message in store.events():
                if wanted and wp not in wanted:
                    continue
                who = f"{wp} ({steps.get(wp, '')})" if wp is not None else "run"
                out.write(f"{_when(t)}  {who}  {kind}" + (f": {message}" if message else "") + "\n")
            return 0
        rows = [
            r
            for r in store.commands()
            if (not wanted or r.wp in wanted) and (not options.failed or r.exit_code not in (0,))
        ]
    if options.json:
        out.write(
            json.dumps(
                [
                    {
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
                    for r in rows
                ]
            )
            + "\n"
        )
        return 0
    for r in rows:
        took = f"{r.ended - r.started:.3f}s" if r.started and r.ended else "-"
        code = "?" if r.exit_code is None else str(r.exit_code)
        where = f"{r.wp} {steps.get(r.wp, '')}"
        extra = (f" attempt {r.attempt}" if r.attempt > 1 else "") + (
            f" cycle {r.cycle}" if r.cycle else ""
        )
        role = "" if r.role == "do" else f" [{r.role}]"
        out.write(f"{_when(r.started)}  {where}{extra}  do {r.op + 1}{role}  exit {code}  {took}\n")
        out.writelines(f"    $ {line}\n" for line in r.command.splitlines() or [""])
    return 0
