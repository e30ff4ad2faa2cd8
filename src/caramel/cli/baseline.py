"""`bench baseline set NAME [DIR] -i ID`: name a run as the baseline later runs compare with."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from caramel.cli.common import add_run_args

COMMAND = "baseline"  # `bench baseline` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "baseline", help="name a run as a baseline (bench compare --baseline NAME)"
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="set")
    setter = actions.add_parser("set", help="name the run NAME")
    setter.add_argument("name", metavar="NAME")
    add_run_args(setter)
    setter.add_argument(
        "--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class BaselineOptions:
    name: str
    dir: str | None = None
    id: str | None = None
    history: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BaselineOptions:
        return cls(name=args.name, dir=args.dir, id=args.id, history=args.history)


def run(args: argparse.Namespace) -> int:
    return set_baseline(BaselineOptions.from_args(args), sys.stdout)


def set_baseline(options: BaselineOptions, out: TextIO) -> int:
    """`bench baseline set NAME`: the run (imported into the history first) named NAME."""
    from caramel.cli.compare import imported
    from caramel.consumers.history.store import History
    from caramel.stages.state.registry import resolve

    run_dir = resolve(options.dir, options.id)
    with History.open(options.history) as history:
        key = imported(history, run_dir)
        history.set_baseline(options.name, key)
        record, figures = history.run(key), len(history.metrics(key))
    benchmark = (
        f" (benchmark {record.benchmark}, {figures} figure(s))" if record is not None else ""
    )
    out.write(f"baseline '{options.name}': {run_dir}{benchmark}\n")
    if not figures:
        from caramel.cli.compare import NO_FIGURE_HINT

        print(
            f"warning: the run has no figure, so nothing can be compared with it; {NO_FIGURE_HINT}",
            file=sys.stderr,
        )
    return 0
