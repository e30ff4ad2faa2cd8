"""`bench dashboard [--history FILE ...] [--benchmark B] [--system S] -o FILE.html`: one page over
every run of one or more histories (one per site), drawn with plotly.js inlined
(docs/dashboard.md)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from caramel.consumers.pages.sources import Collection


COMMAND = "dashboard"  # `bench dashboard` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "dashboard", help="write one self-contained HTML dashboard over the whole history"
    )
    parser.add_argument(
        "--history",
        action="append",
        default=[],
        metavar="FILE",
        help="history database; repeat to merge several sites' histories "
        "(default $CARAMEL_HISTORY, else the user's history.db)",
    )
    parser.add_argument("--benchmark", metavar="NAME", help="only runs of this benchmark")
    parser.add_argument("--system", metavar="NAME", help="only runs on this system")
    parser.add_argument(
        "--baseline",
        metavar="NAME",
        help="the named baseline (bench baseline set) the summary compares with "
        "(default: any baseline set for the benchmark and system)",
    )
    parser.add_argument("--title", default="caramel dashboard", help="the page's title")
    parser.add_argument(
        "-o", "--output", required=True, metavar="FILE.html", help="the page to write"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class DashboardOptions:
    output: str
    history: tuple[str, ...] = ()
    benchmark: str | None = None
    system: str | None = None
    baseline: str | None = None
    title: str = "caramel dashboard"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> DashboardOptions:
        return cls(
            output=args.output,
            history=tuple(args.history),
            benchmark=args.benchmark,
            system=args.system,
            baseline=args.baseline,
            title=args.title,
        )


def run(args: argparse.Namespace) -> int:
    return dashboard(DashboardOptions.from_args(args))


def dashboard(options: DashboardOptions) -> int:
    """`bench dashboard`: the page (and the CSV of every figure when it thins); one line on
    stderr."""
    from caramel.cli.outputs import refuse_inputs
    from caramel.consumers.history.store import default_path
    from caramel.consumers.pages import marks as change_marks
    from caramel.consumers.pages.render import page_parts
    from caramel.consumers.pages.sources import load
    from caramel.fs.writes import Target, replacing, target_of

    histories = list(options.history) or [default_path()]
    refuse_inputs(options.output, history=histories)
    collection = load(histories, options.benchmark, options.system)
    # a page that draws thinned series has every figure in a CSV file beside it (docs/dashboard.md),
    # written before the page, so an error writing it leaves no page that names it
    # (a page sent to a device, a FIFO or standard output has no folder to hold it: no CSV then)
    points = os.path.splitext(options.output)[0] + ".csv"
    with_points = collection.thinned and target_of(options.output) is Target.FILE
    if with_points:
        refuse_inputs(points, history=histories)
        _write_points(points, collection)
    # the change points are found on every figure; then the page needs only the figures it draws,
    # and the columns of every figure go before it is rendered (pages.sources.drop_numbers)
    marks = change_marks.find(collection)
    collection.drop_numbers()
    parts = page_parts(
        collection,
        options.title,
        baseline=options.baseline,
        all_points=os.path.basename(points) if with_points else None,
        marks=marks,
    )
    with replacing(options.output) as handle:  # the page whole or not at all, as it is rendered
        handle.writelines(parts)
    print(
        f"dashboard of {len(collection.runs)} run(s), "
        f"{len(collection.figures)} figure(s): {options.output}",
        file=sys.stderr,
    )
    return 0


def _write_points(path: str, collection: Collection) -> None:
    """The CSV of every figure at `path`, written whole or not at all."""
    from caramel.consumers.pages.points import write_points
    from caramel.fs.writes import replacing

    with replacing(path) as handle:
        write_points(collection, handle)
