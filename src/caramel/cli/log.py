"""`bench log [DIR] [-i ID|last] [-w WP ...]`: the commands a run ran, their exit codes and times."""

from __future__ import annotations

import argparse
import json
import time

from caramel.cli.common import add_run_args, open_run


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("log", help="the commands run: workpackage, exit code, start, duration")
    add_run_args(parser)
    parser.add_argument("-w", "--workpackage", type=int, nargs="+", action="extend", default=[], metavar="WP",
                        help="only these workpackages")
    parser.add_argument("--failed", action="store_true", help="only commands that did not exit 0")
    parser.add_argument("--events", action="store_true", help="state changes instead of commands")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.set_defaults(func=run)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def run(args: argparse.Namespace) -> int:
    with open_run(args) as (_run_dir, store):
        steps: dict[int | None, str] = {wp.id: wp.step for wp in store.workpackages()}
        wanted = set(args.workpackage)
        if args.events:
            for t, wp, kind, message in store.events():
                if wanted and wp not in wanted:
                    continue
                who = f"{wp} ({steps.get(wp, '')})" if wp is not None else "run"
                print(f"{_when(t)}  {who}  {kind}" + (f": {message}" if message else ""))
            return 0
        rows = [r for r in store.commands() if (not wanted or r.wp in wanted)
                and (not args.failed or r.exit_code not in (0,))]
    if args.format == "json":
        print(json.dumps([{"wp": r.wp, "step": steps.get(r.wp), "attempt": r.attempt, "cycle": r.cycle,
                           "do": r.op + 1, "kind": r.role, "command": r.command, "cwd": r.cwd,
                           "exit_code": r.exit_code, "started": r.started, "ended": r.ended} for r in rows]))
        return 0
    for r in rows:
        took = f"{r.ended - r.started:.3f}s" if r.started and r.ended else "-"
        code = "?" if r.exit_code is None else str(r.exit_code)
        where = f"{r.wp} {steps.get(r.wp, '')}"
        extra = (f" attempt {r.attempt}" if r.attempt > 1 else "") + (f" cycle {r.cycle}" if r.cycle else "")
        role = "" if r.role == "do" else f" [{r.role}]"
        print(f"{_when(r.started)}  {where}{extra}  do {r.op + 1}{role}  exit {code}  {took}")
        for line in r.command.splitlines() or [""]:
            print(f"    $ {line}")
    return 0
