"""`bench report [DIR] [-i ID ...] -o FILE`: a self-contained HTML report of a few runs, drawn
as the dashboard is (plotly.js inlined), with each run's provenance and tables."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import add_no_eval, add_run_args, runs_to_visit
from caramel.cli.spellings import add_old_spelling

if TYPE_CHECKING:  # the pages' modules: imported by the command, not by `bench --help`
    from caramel.consumers.pages.sources import Collection

COMMAND = "report"  # `bench report` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "report", help="write a self-contained HTML report (tables, plots, history)"
    )
    add_run_args(parser)
    add_no_eval(parser)
    parser.add_argument(
        "-o", "--output", dest="html", required=True, metavar="FILE", help="the page to write"
    )
    add_old_spelling(parser, "--html", "--output")
    parser.add_argument(
        "--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)"
    )
    parser.set_defaults(func=run, runs_at_once=True)  # one page of every -i run (cli/main.py)


@dataclass(frozen=True)
class ReportOptions:
    html: str
    dir: str | None = None
    id: str | None = None  # one run id, or several joined by commas
    history: str | None = None
    no_eval: bool = False
    runs: tuple[str, ...] = ()  # run folders of `-i all`, `-i -1`, `-i 0 1` (dir and id unused)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReportOptions:
        runs = runs_to_visit(args.dir, args.id)
        return cls(
            html=args.html,
            dir=args.dir,
            id=None if runs else args.id,
            history=args.history,
            no_eval=args.no_eval,
            runs=tuple(runs or ()),
        )


def run(args: argparse.Namespace) -> int:
    return report(ReportOptions.from_args(args), sys.stdout)


def report(options: ReportOptions, out: TextIO) -> int:
    """`bench report`: one HTML page of the chosen runs (imported into the history first)."""
    from caramel.cli.compare import imported
    from caramel.cli.outputs import refuse_inputs
    from caramel.consumers.history.store import History, default_path
    from caramel.consumers.pages.render import page
    from caramel.consumers.pages.sources import load
    from caramel.fs.writes import write_text
    from caramel.stages.analyse import from_run
    from caramel.stages.report.readable import for_people
    from caramel.stages.report.results import produce
    from caramel.stages.state.registry import resolve

    refuse_inputs(options.html, history=options.history, option="-o")
    ids = options.id.split(",") if options.id and not options.runs else [None]
    run_dirs = list(options.runs) or [resolve(options.dir, run_id) for run_id in ids]
    chosen = []
    with History.open(options.history) as history:
        for run_dir in run_dirs:
            refuse_inputs(options.html, run_dir=run_dir, history=options.history, option="-o")
            inp = from_run(run_dir)
            if options.no_eval:
                from caramel.stages.spec.evaluation import refuse_evaluation

                refuse_evaluation(inp.benchmark, analysis_only=True)
            key = imported(history, run_dir)
            # rounded as the terminal shows them (report.readable), empty columns left out
            tables = [
                (shown.name, shown.headings, shown.cells)
                for shown in (
                    for_people(item.data)
                    for item in produce(inp).made
                    if item.table.output == "table"
                )
            ]
            record = history.run(key)
            assert record is not None  # imported just above
            chosen.append((key, record.benchmark, tables))
    collection = load([options.history or default_path()], whole={key for key, _, _ in chosen})
    benchmarks = {bench for _, bench, _ in chosen}
    _keep_benchmarks(collection, benchmarks)
    index = {r.record.run_key: r.index for r in collection.runs}
    text = page(
        collection,
        f"caramel report: {', '.join(sorted(benchmarks))}",
        runs=[(index[key], tables) for key, _, tables in chosen],
    )
    write_text(options.html, text)
    # the page on standard output (--html -) keeps it to itself: the note goes to stderr then
    note = sys.stderr if options.html == "-" else out
    note.write(f"report of {len(chosen)} run(s): {options.html}\n")
    return 0


def _keep_benchmarks(collection: Collection, benchmarks: set[str]) -> None:
    """Only the chosen runs' benchmarks (their history stays, for the plots over time)."""
    from caramel.consumers.pages.sources import keep_runs

    keep_runs(collection, [r for r in collection.runs if r.record.benchmark in benchmarks])
