"""`bench report [DIR] [-i ID ...] --html FILE`: a self-contained HTML report of runs."""

from __future__ import annotations

import argparse
import sys

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
    from caramel.history.store import History
    from caramel.report.html import render
    from caramel.report.results import produce
    from caramel.state.registry import resolve

    ids = args.id.split(",") if args.id else [None]
    pages = []
    with History.open(args.history) as history:
        for run_id in ids:
            run_dir = resolve(args.dir, run_id)
            inp = from_run(run_dir)
            if args.no_eval:
                from caramel.spec.evaluation import refuse_evaluation

                refuse_evaluation(inp.benchmark, analysis_only=True)
            key = imported(history, run_dir)
            tables = []
            for item in produce(inp).made:
                if item.table.kind == "table":
                    tables.append((item.table.name, item.data.headings, item.data.cells))
            pages.append((history.run(key), tables))
        text = render(history, pages)
        for note in dict.fromkeys(history.skipped):
            print(f"warning: {note} (bench history remove RUN drops that run)", file=sys.stderr)
    with open(args.html, "w") as handle:
        handle.write(text)
    print(f"report of {len(pages)} run(s): {args.html}")
    return 0
