"""`bench analyse [DIR] [-i ID|last]`: analyse the run's logs now (JUBE users' `jube analyse`).

`bench result` analyses on its own; this command only fills the run's analyse.db and says what it
did, for those used to the two JUBE steps.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import (
    UpdateOptions,
    add_no_eval,
    add_run_args,
    add_update,
    analysis_input_of,
)

if TYPE_CHECKING:  # the analyse stage: imported by the command, not by `bench --help`
    from caramel.stages.analyse.analyser import AnalyserResult

COMMAND = "analyse"  # `bench analyse` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "analyse", aliases=["analyze"], help="analyse the run's logs (bench result does it too)"
    )
    add_run_args(parser)
    add_no_eval(parser)
    add_update(parser)
    parser.add_argument(
        "--reanalyse", action="store_true", help="ignore analysed values kept from earlier calls"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class AnalyseOptions:
    dir: str | None = None
    id: str | None = None
    update: UpdateOptions = field(default_factory=UpdateOptions)
    reanalyse: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AnalyseOptions:
        return cls(
            dir=args.dir, id=args.id, update=UpdateOptions.from_args(args), reanalyse=args.reanalyse
        )


def run(args: argparse.Namespace) -> int:
    return analyse(AnalyseOptions.from_args(args), sys.stdout)


def analyse(options: AnalyseOptions, out: TextIO) -> int:
    """`bench analyse`: the run's logs analysed into its analyse.db, and a line per analyser."""
    from caramel.stages.analyse import analyse_all
    from caramel.stages.report.results import warnings
    from caramel.stages.state.registry import resolve

    run_dir = resolve(options.dir, options.id)
    inp = analysis_input_of(options.update, run_dir)
    if options.update.no_eval:
        from caramel.stages.spec.evaluation import refuse_evaluation

        refuse_evaluation(inp.benchmark, analysis_only=True)
    analysed = analyse_all(inp, use_cache=not options.reanalyse)
    for line in warnings(analysed):
        print(f"warning: {line}", file=sys.stderr)
    for name, result in analysed.items():
        out.write(f"analyser {name}: {_analysed_line(result)}\n")
    if not analysed:
        out.write(f"benchmark '{inp.benchmark.name}' defines no analyser\n")
    out.write(f"tables: bench result {run_dir}\n")
    return 0


def _analysed_line(result: AnalyserResult) -> str:
    """An analyser's results: how many, analysed now or unchanged, with missing files and not
    started."""
    missing = sum(bool(g.missing) for g in result.groups.values())
    unstarted = sum(not g.started for g in result.groups.values())
    line = (
        f"{len(result.groups)} results ({result.scanned} analysed now, {result.reused} unchanged)"
    )
    if missing:
        line += f", {missing} with missing files"
    if unstarted:
        line += f", {unstarted} not started"
    return line
