"""What `bench result` (and `compare`, `report`) do with the history: add a run once."""

from __future__ import annotations

import sys
from collections.abc import Callable

from caramel.analyse.inputs import AnalysisInput
from caramel.history.metrics import collect
from caramel.history.provenance import run_key, run_record
from caramel.history.store import History


def add_run(history: History, inp: AnalysisInput, tables: Callable[[], list], quiet_if_known: bool = False) -> str:
    """Add the run of `inp` (its provenance and metrics) unless it is there; returns its key.
    `tables`: makes the tables the figures come from (report.results.history_tables), called only
    when needed. `quiet_if_known`: nothing changed since the last result, so a run already there is
    left as is. A run already there keeps the figures that did not change."""
    if quiet_if_known:
        known = run_key(inp.run_dir)
        if history.run(known) is not None:
            return known
    record = run_record(inp.run_dir)
    history.add(record, collect(inp, tables()), replace=True)
    return record.run_key


def add_quietly(path: str | None, inp: AnalysisInput, tables: Callable[[], list], unchanged: bool) -> None:
    """`bench result`'s part: a history that cannot be written is a warning, never a failed result."""
    try:
        with History.open(path) as history:
            add_run(history, inp, tables, quiet_if_known=unchanged)
    except Exception as exc:  # noqa: BLE001 - the tables were printed; the history is a bonus
        print(f"warning: the run was not added to the history ({path or 'default'}): {exc}", file=sys.stderr)
