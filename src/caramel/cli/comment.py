"""`bench comment TEXT [DIR] [-i ID ...] [-a]`: set (or with -a extend) a run's comment, as JUBE's
`jube comment` (jube/main.py, `_manipulate_comment`: `-a` appends the text to the comment as it
is, and every run of whitespace becomes one space). `bench info` shows it; `bench run -m TEXT`
sets it when the run is made.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import TextIO

from caramel.cli.common import add_run_args

COMMAND = "comment"  # `bench comment` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("comment", help="set or extend a run's comment (bench info shows it)")
    parser.add_argument("comment", metavar="TEXT", help="the comment")
    add_run_args(parser)
    parser.add_argument(
        "-a", "--append", action="store_true", help="add TEXT to the end of the comment"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class CommentOptions:
    comment: str
    dir: str | None = None
    id: str | None = None
    append: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CommentOptions:
        return cls(comment=args.comment, dir=args.dir, id=args.id, append=args.append)


def one_line(text: str) -> str:
    """JUBE's form of a comment: every run of whitespace one space."""
    return re.sub(r"\s+", " ", text)


def run(args: argparse.Namespace) -> int:
    return comment(CommentOptions.from_args(args), sys.stdout)


def comment(options: CommentOptions, out: TextIO) -> int:
    from caramel.stages.state.registry import resolve
    from caramel.stages.state.store import Store, db_path

    run_dir = resolve(options.dir, options.id)
    store = Store(db_path(run_dir))
    try:
        model = store.model()
        text = model.comment + options.comment if options.append else options.comment
        model.comment = one_line(text)
        store.replace_model(model)
    finally:
        store.close()
    out.write(f"comment of {run_dir}: {model.comment}\n")
    return 0
