"""`bench remove [DIR] [-i ID|last] [-w WP ...] [-f]`: delete a run, or workpackages so continue
redoes them.

Nothing is deleted without a yes at the terminal, or `-f`: with standard input not a terminal (a
script, a pipe, cron) and no `-f`, remove refuses, deleting nothing. What it deletes is proven a
run first (engine.remove, state.identity); `-i last` is the run made last (state.registry).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from caramel.cli.common import add_run_args
from caramel.errors import RunError

COMMAND = "remove"  # `bench remove` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "remove", help="delete a run, or single workpackages (and what depends on them)"
    )
    add_run_args(parser)
    parser.add_argument(
        "-w",
        "--workpackage",
        type=int,
        nargs="+",
        action="extend",
        default=[],
        metavar="WP",
        help="only these workpackages (and their dependants): bench continue runs them again",
    )
    parser.add_argument("-f", "--force", action="store_true", help="do not ask")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class RemoveOptions:
    dir: str | None = None
    id: str | None = None
    workpackages: tuple[int, ...] = ()  # -w: only these and their dependants (none: the whole run)
    force: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RemoveOptions:
        return cls(dir=args.dir, id=args.id, workpackages=tuple(args.workpackage), force=args.force)


def run(args: argparse.Namespace) -> int:
    return remove(RemoveOptions.from_args(args), sys.stdout)


def remove(options: RemoveOptions, out: TextIO) -> int:
    """`bench remove`: a run, or workpackages and their dependants, deleted once confirmed."""
    from caramel.stages.engine.remove import remove_run, remove_workpackages
    from caramel.stages.state.identity import proven
    from caramel.stages.state.registry import resolve

    run_dir = resolve(options.dir, options.id)
    made = proven(run_dir)  # before asking: a folder that is no run is refused, whatever the answer
    chosen = options.workpackages
    what = (
        f"workpackage{'s' if len(chosen) > 1 else ''} {', '.join(map(str, chosen))} "
        f"(and what depends on them) of run {run_dir}"
        if chosen
        else f"run {run_dir} ({made.benchmark}) and everything in it"
    )
    if not options.force and not _confirmed(what):
        out.write("nothing removed\n")
        return 1
    if chosen:
        ids = remove_workpackages(run_dir, list(chosen))
        out.write(
            f"removed workpackage{'s' if len(ids) > 1 else ''} "
            f"{', '.join(map(str, ids))} of {run_dir}; "
            f"bench continue runs {'them' if len(ids) > 1 else 'it'} again\n"
        )
        return 0
    remove_run(run_dir)
    out.write(f"removed {run_dir}\n")
    return 0


def _confirmed(what: str) -> bool:
    """A yes at the terminal; no terminal to ask at is an error (nothing is deleted unasked)."""
    if not sys.stdin.isatty():
        raise RunError(
            f"bench remove would delete {what}, and cannot ask: "
            "its standard input is not a terminal; nothing removed",
            hint="give -f to remove without asking",
        )
    answer = input(f"remove {what}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")
