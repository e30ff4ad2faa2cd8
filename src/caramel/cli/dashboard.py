"""`bench dashboard [--history FILE ...] [--benchmark B] [--system S] -o FILE.html`: one page over
every run of one or more histories (one per site), drawn with plotly.js inlined (docs/dashboard.md)."""

from __future__ import annotations

import argparse
import os
import sys


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("dashboard", help="write one self-contained HTML dashboard over the whole history")
    parser.add_argument("--history", action="append", default=[], metavar="FILE",
                        help="history database; repeat to merge several sites' histories "
                             "(default $CARAMEL_HISTORY, else the user's history.db)")
    parser.add_argument("--benchmark", metavar="NAME", help="only runs of this benchmark")
    parser.add_argument("--system", metavar="NAME", help="only runs on this system")
    parser.add_argument("--baseline", metavar="NAME",
                        help="the named baseline (bench baseline set) the summary compares with "
                             "(default: any baseline set for the benchmark and system)")
    parser.add_argument("--title", default="caramel dashboard", help="the page's title")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.html", help="the page to write")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.cli.outputs import refuse_inputs
    from caramel.fs.writes import replacing, write_text
    from caramel.history.store import default_path
    from caramel.pages.points import write_points
    from caramel.pages.render import page
    from caramel.pages.sources import load

    histories = args.history or [default_path()]
    refuse_inputs(args.output, history=histories)
    collection = load(histories, args.benchmark, args.system)
    # a page that draws thinned series has every figure in a CSV file beside it (docs/dashboard.md)
    points = os.path.splitext(args.output)[0] + ".csv" if collection.thinned else None
    if points:
        refuse_inputs(points, history=histories)
        with replacing(points) as handle:
            write_points(collection, handle)
    text = page(collection, args.title, baseline=args.baseline, all_points=os.path.basename(points) if points else None)
    write_text(args.output, text)
    print(f"dashboard of {len(collection.runs)} run(s), {len(collection.figures)} figure(s): {args.output}",
          file=sys.stderr)
    return 0
