"""Moving runs between two histories of either engine: `bench history copy SRC DST` and the
delivery of spooled runs (history.spool). One run at a time, each in one transaction, so a history
of any size streams and a copy stopped halfway is taken up again by running it again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from caramel.consumers.history.store import History


@dataclass
class Copied:
    runs: int = 0  # runs new to the destination
    figures: int = 0  # figures added (or changed, when replacing)
    baselines: int = 0


def copy_runs(source: History, destination: History, replace: bool = False,
              after_each: Callable[[str], object] | None = None) -> Copied:
    """Every run of `source` (with its figures, and the baselines naming it) into `destination`.
    `replace` false keeps what the destination has (an import: the same run twice adds nothing);
    true gives the source's figures precedence (a spooled `bench result`). `after_each(run_key)` is
    called once a run is committed in the destination."""
    out = Copied()
    for run in source.runs():
        known = destination.run(run.run_key) is not None
        with destination.db:
            out.figures += destination._insert(run, source.metrics(run.run_key), replace=replace)
            made_from = source.made_from(run.run_key)
            if made_from and (replace or destination.made_from(run.run_key) is None):
                destination.set_made_from(run.run_key, made_from)
        out.runs += not known
        if after_each is not None:
            after_each(run.run_key)
    names = source.db.execute("SELECT name, run_key FROM baselines").fetchall()
    for name, run_key in names:
        if destination.baseline(name) is None:
            destination.set_baseline(name, run_key)
            out.baselines += 1
    return out
