"""`bench plan FILE`: list every workpackage before anything runs (nothing is written)."""

from __future__ import annotations

import argparse
import sys

from caramel.cli.common import add_benchmark_args, load_benchmarks
from caramel.cli.plan_output import plan_json, print_plan, write_json
from caramel.cli.predict import add_predict_args
from caramel.expand.plan import make_plan


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("plan", help="list the workpackages a run would create")
    add_benchmark_args(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.add_argument("--predict", action="store_true",
                        help="add each workpackage's predicted job time and the campaign's node-hours and energy "
                             "(from the history: bench predict)")
    add_predict_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    benchmarks = load_benchmarks(args)
    plans = [make_plan(bench, max_workpackages=args.max_workpackages) for bench in benchmarks]
    if args.predict:
        from caramel.cli.predict import print_cost

        for bench, plan in zip(benchmarks, plans, strict=True):
            print_cost(bench, plan, args)
        return 0
    if args.format == "json":
        docs = [plan_json(plan) for plan in plans]
        write_json(docs[0] if len(docs) == 1 else docs, sys.stdout)
        return 0
    for plan in plans:
        print_plan(plan)
    return 0
