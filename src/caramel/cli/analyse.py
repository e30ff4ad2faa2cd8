"""`bench analyse [DIR] [-i ID|last]`: analyse the run's logs now (JUBE users' `jube analyse`).

`bench result` analyses on its own; this command only fills the run's analyse.db and says what it
did, for those used to the two JUBE steps.
"""

from __future__ import annotations

import argparse
import sys

from caramel.cli.common import add_no_eval, add_run_args, add_update, analysis_input, resolve_run


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("analyse", aliases=["analyze"], help="analyse the run's logs (bench result does it too)")
    add_run_args(parser)
    add_no_eval(parser)
    add_update(parser)
    parser.add_argument("--reanalyse", action="store_true", help="ignore analysed values kept from earlier calls")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.analyse import analyse_all
    from caramel.report.results import warnings

    run_dir = resolve_run(args)
    inp = analysis_input(args, run_dir)
    if args.no_eval:
        from caramel.spec.evaluation import refuse_evaluation

        refuse_evaluation(inp.benchmark, analysis_only=True)
    analysed = analyse_all(inp, use_cache=not args.reanalyse)
    for line in warnings(analysed):
        print(f"warning: {line}", file=sys.stderr)
    for name, result in analysed.items():
        missing = sum(1 for g in result.groups.values() if g.missing)
        unstarted = sum(1 for g in result.groups.values() if not g.started)
        print(f"analyser {name}: {len(result.groups)} results ({result.scanned} analysed now, "
              f"{result.reused} unchanged)" + (f", {missing} with missing files" if missing else "")
              + (f", {unstarted} not started" if unstarted else ""))
    if not analysed:
        print(f"benchmark '{inp.benchmark.name}' defines no analyser")
    print(f"tables: bench result {run_dir}")
    return 0
