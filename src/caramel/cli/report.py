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
    from caramel.consumers.history.store import History
    from caramel.consumers.pages.sources import Collection
    from caramel.stages.analyse.inputs import AnalysisInput

# a table as the page shows it: its name, headings and rows of formatted cells
ShownTable = tuple[str, list[str], list[list[str]]]

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
    from caramel.cli.outputs import refuse_inputs
    from caramel.consumers.history.store import History
    from caramel.consumers.pages.render import page
    from caramel.fs.writes import write_text

    refuse_inputs(options.html, history=options.history, option="-o")
    with History.open(options.history) as history:
        chosen = [_chosen_run(history, options, run_dir) for run_dir in _run_dirs(options)]
    benchmarks = {bench for _, bench, _ in chosen}
    collection = _history_of(options.history, chosen, benchmarks)
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


def _history_of(
    history: str | None, chosen: list[tuple[str, str, list[ShownTable]]], benchmarks: set[str]
) -> Collection:
    """The history of the chosen runs' benchmarks (for the plots over time), the chosen runs
    whole."""
    from caramel.consumers.history.store import default_path
    from caramel.consumers.pages.sources import load

    collection = load([history or default_path()], whole={key for key, _, _ in chosen})
    _keep_benchmarks(collection, benchmarks)
    return collection


def _run_dirs(options: ReportOptions) -> list[str]:
    """The run folders -i (one id, several joined by commas, or a selection) or DIR name."""
    from caramel.stages.state.registry import resolve

    ids = options.id.split(",") if options.id and not options.runs else [None]
    return list(options.runs) or [resolve(options.dir, run_id) for run_id in ids]


def _chosen_run(
    history: History, options: ReportOptions, run_dir: str
) -> tuple[str, str, list[ShownTable]]:
    """A run imported into the history: its key, benchmark and tables as the page shows them."""
    from caramel.cli.compare import imported
    from caramel.cli.outputs import refuse_inputs
    from caramel.stages.analyse import from_run

    refuse_inputs(options.html, run_dir=run_dir, history=options.history, option="-o")
    inp = from_run(run_dir)
    if options.no_eval:
        from caramel.stages.spec.evaluation import refuse_evaluation

        refuse_evaluation(inp.benchmark, analysis_only=True)
    key = imported(history, run_dir)
    record = history.run(key)
    assert record is not None  # imported just above
    return key, record.benchmark, _shown_tables(inp)


def _shown_tables(inp: AnalysisInput) -> list[ShownTable]:
    """The run's tables (not its databases) rounded as the terminal shows them
    (report.readable), empty columns left out: (name, headings, cells)."""
    from caramel.stages.report.readable import for_people
    from caramel.stages.report.results import produce

    shown = [for_people(item.data) for item in produce(inp).made if item.table.output == "table"]
    return [(table.name, table.headings, table.cells) for table in shown]


def _keep_benchmarks(collection: Collection, benchmarks: set[str]) -> None:
    """Only the chosen runs' benchmarks (their history stays, for the plots over time)."""
    from caramel.consumers.pages.sources import keep_runs

    keep_runs(collection, [r for r in collection.runs if r.record.benchmark in benchmarks])
