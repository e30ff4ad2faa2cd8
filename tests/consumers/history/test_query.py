"""The one read path (history/query.py): a value that is no number where a number belongs (a
damaged row of an older history) reads as NaN, never as the number its text spells, and the pages
leave such a figure out (as the plain scan of schema 3 did: reader.py's _SCAN, 'ELSE 1e999')."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from caramel.consumers.history import query
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.reader import read_history
from caramel.consumers.history.store import History, RunRecord

VALUES = st.one_of(st.floats(), st.integers(-2**53, 2**53), st.text(max_size=5), st.none(),
                   st.binary(max_size=4))


@given(st.lists(VALUES, max_size=8))
def test_plain_numbers_keeps_numbers_and_nothing_else(values) -> None:
    column = pd.Series(values, dtype=object)
    got = query.plain_numbers(column).tolist()
    for value, number in zip(values, got, strict=True):
        if type(value) in (int, float):
            assert number == float(value) or (math.isnan(number) and math.isnan(value))
        else:
            assert math.isnan(number)


def test_a_figure_whose_mean_is_a_text_is_left_out_of_the_pages(tmp_path) -> None:
    path = str(tmp_path / "h.db")
    with History(path) as history:
        history.add(RunRecord("k", "b", started=1.0), [Metric("t", {"n": "1"}, "rate", "", "higher", [1.0]),
                                                       Metric("t", {"n": "2"}, "rate", "", "higher", [2.0])])
        with history.db:
            history.db.execute("UPDATE figures SET mean = 'fast', n = 'two' WHERE rowid = 1")
    figures = read_history(path).figures
    assert math.isnan(figures[0][7]) and figures[0][6] == 1  # no mean; n no number: one sample
    assert [f[7] for f in figures if not math.isnan(f[7])] == [2.0]


def test_a_series_text_stored_as_a_blob_that_is_no_utf8_reads_replaced(tmp_path) -> None:
    """perf/fuzz_long.py's history_rows found it: a direction stored as the BLOB b'f\\xf4' (a
    damaged history) was a UnicodeDecodeError out of pandas' astype(str); it reads as text, the
    bytes that do not decode replaced, and a BLOB that is UTF-8 reads as its text."""
    path = str(tmp_path / "h.db")
    with History(path) as history:
        history.add(RunRecord("k", "b", started=1.0), [Metric("t", {"n": "1"}, "rate", "GF/s", "higher", [1.0])])
        with history.db:
            history.db.execute("UPDATE series SET direction = ?, unit = ?", (b"f\xf4", b"GF/s"))
    (key,) = read_history(path).keys
    assert key[-2:] == ("GF/s", "f\N{REPLACEMENT CHARACTER}")
