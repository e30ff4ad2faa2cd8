"""`bench dashboard [--history FILE ...] [--benchmark B] [--system S] -o FILE.html`: one page over
every run of one or more histories (one per site), drawn with plotly.js inlined (docs/dashboard.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from caramel.errors import CaramelError, RunError

if TYPE_CHECKING:
    from caramel.pages.sources import Collection


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
        return cls(output=args.output, history=tuple(args.history), benchmark=args.benchmark, system=args.system,
                   baseline=args.baseline, title=args.title)


def run(args: argparse.Namespace) -> int:
    return dashboard(DashboardOptions.from_args(args))


def dashboard(options: DashboardOptions) -> int:
    """`bench dashboard`: the page (and the CSV of every figure when it thins); one line on stderr."""
    from caramel.cli.outputs import refuse_inputs
    from caramel.fs.writes import write_text
    from caramel.history.store import default_path
    from caramel.pages.render import page
    from caramel.pages.sources import load

    histories = list(options.history) or [default_path()]
    refuse_inputs(options.output, history=histories)
    collection = load(histories, options.benchmark, options.system)
    # a page that draws thinned series has every figure in a CSV file beside it (docs/dashboard.md)
    points = os.path.splitext(options.output)[0] + ".csv" if collection.thinned else None
    if points:
        refuse_inputs(points, history=histories)
    with _meanwhile(lambda: _write_points(collection, points) if points else None):
        text = page(collection, options.title, baseline=options.baseline,
                    all_points=os.path.basename(points) if points else None)
    write_text(options.output, text)
    print(f"dashboard of {len(collection.runs)} run(s), {len(collection.figures)} figure(s): {options.output}",
          file=sys.stderr)
    return 0


def _write_points(collection: Collection, path: str) -> None:
    from caramel.fs.writes import replacing
    from caramel.pages.points import write_points

    with replacing(path) as handle:
        write_points(collection, handle)


@contextlib.contextmanager
def _meanwhile(work: Callable[[], object]) -> Iterator[None]:
    """Run `work` in a forked process while the body runs, and wait for it at the end: the CSV of a
    million figures (seconds of number formatting) is written beside the page while the page is built,
    on a second core. The child shares the parent's memory (copy on write: the columns are not copied).
    Its error is the parent's (a RunError with its message and hint). Where processes cannot be forked, in turn."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        work()
        yield
        return
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(work, send), daemon=True)
    child.start()
    send.close()
    try:
        yield
    finally:
        try:
            problem, hint = receive.recv()
        except EOFError:  # killed before it could say (out of memory)
            problem, hint = "the process writing the figures' CSV ended without a word", None
        child.join()
        receive.close()
    if problem:
        raise RunError(problem, hint=hint)


def _child(work: Callable[[], object], send: Any) -> None:
    try:
        work()
        send.send(("", None))
    except CaramelError as exc:
        send.send((exc.message, exc.hint))
    except OSError as exc:
        send.send((f"cannot write the figures' CSV: {exc}", None))
