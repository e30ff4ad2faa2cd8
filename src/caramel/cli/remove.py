"""`bench remove [DIR] [-i ID|last] [-w WP ...]`: delete a run, or workpackages so continue redoes them."""

from __future__ import annotations

import argparse
import sys

from caramel.cli.common import add_run_args, resolve_run
from caramel.engine.remove import remove_run, remove_workpackages


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("remove", help="delete a run, or single workpackages (and what depends on them)")
    add_run_args(parser)
    parser.add_argument("-w", "--workpackage", type=int, nargs="+", action="extend", default=[], metavar="WP",
                        help="only these workpackages (and their dependants): bench continue runs them again")
    parser.add_argument("-f", "--force", action="store_true", help="do not ask")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = resolve_run(args)
    if args.workpackage:
        ids = remove_workpackages(run_dir, args.workpackage)
        print(f"removed workpackage{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} of {run_dir}; "
              f"bench continue runs {'them' if len(ids) > 1 else 'it'} again")
        return 0
    if not args.force and sys.stdin.isatty():
        answer = input(f"remove run {run_dir} and everything in it? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return 1
    remove_run(run_dir)
    print(f"removed {run_dir}")
    return 0
