"""A table's row entries (report.table.Entry) kept as columns, as report.incremental stores them.

    columns = to_columns(entries, width, sorts)    # JSON: a few long lists
    entries = from_columns(columns, count, width, sorts)    # None: they do not fit

An entry is [sort values, typed values, cells, status, leaf, present]; a table of 10,000 rows kept
row by row is 40,000 small lists to parse, to check and for the garbage collector to walk on every
`bench result` after a log changed. As columns it is one list per sort key, per column (values and
cells) and for the statuses, leaves and present flags, plus the positions of the rows the table's
filter left out (None entries). What is read back is checked as row by row: every column one value
per row, every cell and status a text; anything else is a miss (None), never an error.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from caramel.stages.report.table import Entry

Columns = dict[str, Any]  # JSON's data: checked by from_columns


def to_columns(entries: list[Entry | None], width: int, sorts: int) -> Columns:
    """The entries of a table of `width` columns and `sorts` sort keys, as columns."""
    kept = [entry for entry in entries if entry is not None]
    return {
        "none": [i for i, entry in enumerate(entries) if entry is None],
        "sort": [[entry[0][k] for entry in kept] for k in range(sorts)],
        "vals": [[entry[1][k] for entry in kept] for k in range(width)],
        "texts": [[entry[2][k] for entry in kept] for k in range(width)],
        "status": [entry[3] for entry in kept],
        "leaf": [entry[4] for entry in kept],
        "present": [entry[5] for entry in kept],
    }


def from_columns(columns: Columns, count: int, width: int, sorts: int) -> list[Entry | None] | None:
    """The `count` entries `to_columns` kept, or None where they are not of a table of `width`
    columns and `sorts` sort keys."""
    left_out = columns["none"]
    rows = count - len(left_out)
    sort, vals, texts = columns["sort"], columns["vals"], columns["texts"]
    status, leaf, present = columns["status"], columns["leaf"], columns["present"]
    shape = (len(sort), len(vals), len(texts))
    if not _left_out_fits(left_out, count) or shape != (sorts, width, width):
        return None
    every = [*sort, *vals, *texts, status, leaf, present]
    if any(type(column) is not list or len(column) != rows for column in every):
        return None
    if not set(map(type, itertools.chain(status, *texts))) <= {str}:  # C speed, as table.py
        return None
    made = (
        [list(s), list(v), list(t), st, lf, pr]
        for s, v, t, st, lf, pr in zip(
            _rows(sort, rows),
            _rows(vals, rows),
            _rows(texts, rows),
            status,
            leaf,
            present,
            strict=True,
        )
    )
    return _with_left_out(made, set(left_out), count)


def _left_out_fits(left_out: Any, count: int) -> bool:
    """Whether the positions left out are distinct row positions."""
    return (
        type(left_out) is list
        and all(type(i) is int and 0 <= i < count for i in left_out)
        and len(set(left_out)) == len(left_out)
    )


def _rows(columns: list[list[Any]], rows: int) -> Iterable[tuple[Any, ...]]:
    """The columns row by row (no column: an empty tuple a row)."""
    return zip(*columns, strict=True) if columns else itertools.repeat((), rows)


def _with_left_out(made: Iterator[Entry], left_out: set[int], count: int) -> list[Entry | None]:
    return [None if i in left_out else next(made) for i in range(count)]
