"""`bench plan FILE`: list every workpackage before anything runs (nothing is written)."""

from __future__ import annotations

import argparse
import json
import sys

from caramel.cli.common import add_benchmark_args, load_benchmarks
from caramel.cli.predict import add_predict_args
from caramel.cli.tables import print_table
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


def plan_json(plan) -> dict:
    return {
        "benchmark": plan.benchmark.name,
        "workpackages": [
            {"id": wp.id, "step": wp.step.name, "iteration": wp.iteration,
             "parents": [p.id for p in wp.parents], "parameters": wp.params().typed_values()}
            for wp in plan.workpackages
        ],
    }


def write_json(doc, out) -> None:
    """One workpackage per line: readable, and fast (the C encoder, not the indenting one)."""
    if isinstance(doc, list):
        out.write("[\n")
        for i, item in enumerate(doc):
            write_json(item, out)
            out.write(",\n" if i < len(doc) - 1 else "\n")
        out.write("]\n")
        return
    out.write('{"benchmark": ' + json.dumps(doc["benchmark"]) + ', "workpackages": [\n')
    wps = doc["workpackages"]
    for i, wp in enumerate(wps):
        out.write("  " + json.dumps(wp) + (",\n" if i < len(wps) - 1 else "\n"))
    out.write("]}\n")


def print_plan(plan) -> None:
    """One line per workpackage: id, step, iteration, parents and the values that vary."""
    wps = plan.workpackages
    print(f"benchmark {plan.benchmark.name}: {len(wps)} workpackages")
    varying: list[str] = []
    by_step: dict[str, list] = {}
    for wp in wps:
        by_step.setdefault(wp.step.name, []).append(wp)
    for group in by_step.values():
        first = group[0].params().typed_values()
        for name in first:
            if name not in varying and any(wp.params().typed_values().get(name) != first[name] for wp in group[1:]):
                varying.append(name)
    header = ["id", "step", "iter", "parents"] + varying
    rows = [[str(wp.id), wp.step.name, str(wp.iteration), ",".join(str(p.id) for p in wp.parents)] +
            [str(wp.params().typed_values().get(n, "")).strip()[:30] for n in varying] for wp in wps]
    print_table(sys.stdout, header, rows)
