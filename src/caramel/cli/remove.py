"""`bench remove [DIR] [-i ID|last] [-w WP ...] [-f]`: delete a run, or workpackages so continue redoes them.

Nothing is deleted without a yes at the terminal, or `-f`: with standard input not a terminal (a
script, a pipe, cron) and no `-f`, remove refuses, deleting nothing. What it deletes is proven a
run first (engine.remove, state.identity); `-i last` is the run made last (state.registry).
"""

from __future__ import annotations

import argparse
import sys

from caramel.cli.common import add_run_args, resolve_run
from caramel.engine.remove import remove_run, remove_workpackages
from caramel.errors import RunError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("remove", help="delete a run, or single workpackages (and what depends on them)")
    add_run_args(parser)
    parser.add_argument("-w", "--workpackage", type=int, nargs="+", action="extend", default=[], metavar="WP",
                        help="only these workpackages (and their dependants): bench continue runs them again")
    parser.add_argument("-f", "--force", action="store_true", help="do not ask")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.state.identity import proven

    run_dir = resolve_run(args)
    made = proven(run_dir)  # before asking: a folder that is no run is refused, whatever the answer
    what = (f"workpackage{'s' if len(args.workpackage) > 1 else ''} {', '.join(map(str, args.workpackage))} "
            f"(and what depends on them) of run {run_dir}" if args.workpackage
            else f"run {run_dir} ({made.benchmark}) and everything in it")
    if not args.force and not _confirmed(what):
        print("nothing removed")
        return 1
    if args.workpackage:
        ids = remove_workpackages(run_dir, args.workpackage)
        print(f"removed workpackage{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} of {run_dir}; "
              f"bench continue runs {'them' if len(ids) > 1 else 'it'} again")
        return 0
    remove_run(run_dir)
    print(f"removed {run_dir}")
    return 0


def _confirmed(what: str) -> bool:
    """A yes at the terminal; no terminal to ask at is an error (nothing is deleted unasked)."""
    if not sys.stdin.isatty():
        raise RunError(f"bench remove would delete {what}, and cannot ask: its standard input is not a terminal; "
                       "nothing removed", hint="give -f to remove without asking")
    answer = input(f"remove {what}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")
