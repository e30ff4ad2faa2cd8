"""A table's row entries kept as columns (report.entrycolumns): read back as they were written,
and anything else in their place is a miss (None), never an error."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from caramel.stages.report.entrycolumns import from_columns, to_columns

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()


@st.composite
def tables(draw: st.DrawFn) -> tuple[list, int, int]:
    """Entries as report.table.row_entry makes them: [sort, vals, texts, status, leaf, present],
    some left out by the table's filter (None)."""
    width, sorts = draw(st.integers(0, 4)), draw(st.integers(0, 2))
    entry = st.tuples(
        st.lists(SCALARS, min_size=sorts, max_size=sorts),
        st.lists(SCALARS, min_size=width, max_size=width),
        st.lists(st.text(), min_size=width, max_size=width),
        st.text(),
        st.integers(0, 10**6),
        st.booleans(),
    ).map(list)
    return draw(st.lists(st.none() | entry, max_size=12)), width, sorts


@given(tables())
def test_columns_read_back_as_the_entries_written(table: tuple[list, int, int]) -> None:
    entries, width, sorts = table
    record = json.loads(json.dumps(to_columns(entries, width, sorts)))  # as analyse.db keeps it
    assert from_columns(record, len(entries), width, sorts) == entries


def test_columns_of_another_shape_are_a_miss() -> None:
    entries = [[[1], [4000, "m0"], ["4000", "m0"], "done", 0, True], None,
               [[2], [4001, "m1"], ["4001", "m1"], "failed", 2, True]]
    record = to_columns(entries, 2, 1)
    assert from_columns(record, 3, 2, 1) == entries
    assert from_columns(record, 4, 2, 1) is None  # one row more today
    assert from_columns(record, 3, 3, 1) is None  # a column more
    assert from_columns(record, 3, 2, 0) is None  # a sort key less
    assert from_columns(dict(record, texts=[["4000", 5], ["m0", "m1"]]), 3, 2, 1) is None  # a cell
    assert from_columns(dict(record, status=["done", None]), 3, 2, 1) is None  # not a text
    assert from_columns(dict(record, none=[7]), 3, 2, 1) is None  # no such row
    assert from_columns(dict(record, none=[1, 1]), 3, 2, 1) is None


@given(st.dictionaries(st.sampled_from(["none", "sort", "vals", "texts", "status", "leaf",
                                         "present"]),
                       st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=8)))
def test_anything_else_is_a_miss_or_a_lookup_error(junk: dict) -> None:
    """What report.incremental._decode catches (KeyError, TypeError, ...) or None: never entries
    that do not fit."""
    try:
        found = from_columns(junk, 2, 1, 1)
    except (KeyError, TypeError, ValueError, IndexError):
        return
    assert found is None or (len(found) == 2 and all(e is None or len(e) == 6 for e in found))
