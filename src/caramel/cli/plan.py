"""`bench plan FILE`: list every workpackage before anything runs (nothing is written)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import TextIO

from caramel.cli.common import BenchmarkOptions, add_benchmark_args, add_predict_args, load_named
from caramel.cli.plan_output import plan_json, print_plan, write_json
from caramel.cli.predict import ForecastOptions

COMMAND = "plan"  # `bench plan` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("plan", help="list the workpackages a run would create")
    add_benchmark_args(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.add_argument(
        "--predict",
        action="store_true",
        help="add each workpackage's predicted job time and the campaign's node-hours and energy "
        "(from the history: bench predict)",
    )
    add_predict_args(parser)
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class PlanOptions:
    source: BenchmarkOptions
    json: bool = False
    predict: bool = False  # each workpackage's predicted job time and the campaign's cost
    forecast: ForecastOptions = field(default_factory=ForecastOptions)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PlanOptions:
        return cls(
            source=BenchmarkOptions.from_args(args),
            json=args.format == "json",
            predict=args.predict,
            forecast=ForecastOptions.from_args(args),
        )


def run(args: argparse.Namespace) -> int:
    return plan_command(PlanOptions.from_args(args), sys.stdout)


def plan_command(options: PlanOptions, out: TextIO) -> int:
    """`bench plan`: every workpackage a run would make (nothing is written)."""
    from caramel.stages.expand.plan import make_plan

    benchmarks = load_named(options.source).benchmarks
    plans = [
        make_plan(bench, max_workpackages=options.source.max_workpackages) for bench in benchmarks
    ]
    if options.predict:
        from caramel.cli.predict_cost import print_cost

        for bench, plan in zip(benchmarks, plans, strict=True):
            print_cost(
                bench, plan, options.forecast, list(options.source.systems), options.json, out
            )
        return 0
    if options.json:
        docs = [plan_json(plan) for plan in plans]
        write_json(docs[0] if len(docs) == 1 else docs, out)
        return 0
    for plan in plans:
        print_plan(plan, out)
    return 0
