"""`bench report [DIR] [-i ID ...] --html FILE`: a self-contained HTML report of a few runs, drawn
as the dashboard is (plotly.js inlined), with each run's provenance and tables."""

from __future__ import annotations

import argparse

from caramel.cli.common import add_no_eval, add_run_args


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="write a self-contained HTML report (tables, plots, history)")
    add_run_args(parser)
    add_no_eval(parser)
    parser.add_argument("--html", required=True, metavar="FILE", help="the page to write")
    parser.add_argument("--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.analyse import from_run
    from caramel.cli.compare import imported
    from caramel.cli.outputs import refuse_inputs
    from caramel.fs.writes import write_text
    from caramel.history.store import History, default_path
    from caramel.pages.render import page
    from caramel.pages.sources import load
    from caramel.report.results import produce
    from caramel.state.registry import resolve

    refuse_inputs(args.html, history=args.history, option="--html")
    ids = args.id.split(",") if args.id else [None]
    chosen = []
    with History.open(args.history) as history:
        for run_id in ids:
            run_dir = resolve(args.dir, run_id)
            refuse_inputs(args.html, run_dir=run_dir, history=args.history, option="--html")
            inp = from_run(run_dir)
            if args.no_eval:
                from caramel.spec.evaluation import refuse_evaluation

                refuse_evaluation(inp.benchmark, analysis_only=True)
            key = imported(history, run_dir)
            tables = [(item.table.name, item.data.headings, item.data.cells)
                      for item in produce(inp).made if item.table.output == "table"]
            record = history.run(key)
            assert record is not None  # imported just above
            chosen.append((key, record.benchmark, tables))
    collection = load([args.history or default_path()], whole={key for key, _, _ in chosen})
    benchmarks = {bench for _, bench, _ in chosen}
    _keep_benchmarks(collection, benchmarks)
    index = {r.record.run_key: r.index for r in collection.runs}
    text = page(collection, f"caramel report: {', '.join(sorted(benchmarks))}",
                runs=[(index[key], tables) for key, _, tables in chosen])
    write_text(args.html, text)
    print(f"report of {len(chosen)} run(s): {args.html}")
    return 0


def _keep_benchmarks(collection, benchmarks: set[str]) -> None:
    """Only the chosen runs' benchmarks (their history stays, for the plots over time)."""
    from caramel.pages.sources import keep_runs

    keep_runs(collection, [r for r in collection.runs if r.record.benchmark in benchmarks])
