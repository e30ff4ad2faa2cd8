"""A history's figures as numpy columns (a million figures in 30 MB, no object per figure): the
model history.reader's two reads of an SQLite history (the plain scan, history.grouped's grouped
read) and its read of a PostgreSQL history fill, and the pages draw from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

# tbl, config (JSON), name, unit, direction: what one figure is, in every run that has it
FigureKey = tuple[str, str, str, str, str]
FIELD = "\x1f"  # the unit separator: escaped in JSON, in no name caramel writes
CHUNK_ROWS = 20_000  # rows fetched at a time: a few MB of Python objects at once


@dataclass
class FigureColumns:
    """Every figure of a history as columns: the run (index into HistoryContents.runs), the key
    (index into `keys`, in the order first recorded), and the n, mean and sd of its repeats (NaN
    where none is stored). In the order the figures were recorded."""

    keys: list[FigureKey] = field(default_factory=list)
    run: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    key: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sd: np.ndarray = field(default_factory=lambda: np.zeros(0))


def chunks(cursor: Any) -> Iterator[list[tuple]]:
    while True:
        rows = cursor.fetchmany(CHUNK_ROWS)
        if not rows:
            return
        yield rows


def numbering() -> defaultdict:
    """A dict numbering what it is asked for, new keys in the order they come (0, 1, ...): looked up
    by `map` over its __getitem__, a C loop where a Python step per figure would not be."""
    numbers: defaultdict = defaultdict()
    numbers.default_factory = numbers.__len__
    return numbers


def in_run_order(
    keys: list[tuple[str, ...]], run: np.ndarray, key: np.ndarray, values: np.ndarray
) -> FigureColumns:
    """Figures read in the order written (run and key indices, values as rows n, mean and sd) put in
    the order of the runs (by start time; within a run, as written), rows of no run left out, and
    the keys numbered in the order they first appear there."""
    if run.min() < 0 or np.any(run[1:] < run[:-1]):  # rows of no run, or written out of start order
        keep = np.flatnonzero(run >= 0)
        order = keep[np.argsort(run[keep], kind="stable")]
        run, key, values = run[order], key[order], values[:, order]
    used, first = np.unique(key, return_index=True)
    by_first = used[np.argsort(first, kind="stable")]
    renumber = np.zeros(len(keys), dtype=np.int32)
    renumber[by_first] = np.arange(len(by_first), dtype=np.int32)
    key_list = [cast(FigureKey, keys[k]) for k in by_first.tolist()]
    return FigureColumns(key_list, run, renumber[key], values[0], values[1], values[2])
