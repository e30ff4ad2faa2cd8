"""The dashboard's work on the columns of every figure (perf/history_scale.py's million): the read
path hands a value that is no number as NULL (the record array it fills takes no text), the
regressions take the columns in series order a slice at a time as they did sorted copies, series
numbers fit 32 bits or take 64, the summary's pairs decided at once as one by one, and the page
rendered after the columns of every figure are dropped is the page rendered with them."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.consumers.history.compare import judge, judge_pairs
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.reader import read_history
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages import marks as change_marks
from caramel.consumers.pages import render, sources, thinning
from caramel.consumers.pages.sources import Figure, series_of


def _history(path, runs: int = 12) -> str:
    """`runs` runs of one benchmark, two sizes, one rate each, 3 repeats (seeded noise)."""
    rng = np.random.default_rng(7)
    with History.open(str(path)) as h:
        for i in range(runs):
            metrics = [
                Metric("t", {"size": size}, "rate", "GFLOP/s", "higher",
                       (level * (1 + 0.02 * rng.standard_normal(3))).tolist())
                for size, level in (("32", 100.0), ("64", 200.0))
            ]  # fmt: skip
            h.add(
                RunRecord(f"run{i:02d}", "gemm", system="lab", started=1.75e9 + 60.0 * i), metrics
            )
    return str(path)


def test_a_blob_or_a_text_where_a_number_belongs_reads_as_no_number(tmp_path) -> None:
    """Stored by a damaged history (SQLite keeps any value in any column): the query hands each as
    NULL, so the record array is filled and the figure read as history/query.py says (mean: NaN,
    left out of the pages; sd: no spread; n: one sample)."""
    path = _history(tmp_path / "h.db", runs=2)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE figures SET mean = x'ff00', sd = 'wide', n = x'03' WHERE rowid = 1")
        db.execute("UPDATE figures SET sd = x'00', n = 'three' WHERE rowid = 2")
    numbers = read_history(path).numbers
    assert math.isnan(numbers["mean"][0]) and math.isnan(numbers["sd"][0])
    assert math.isnan(numbers["n"][0]) and math.isnan(numbers["n"][1])
    coll = sources.load([path])
    assert len(coll.numbers) == 3  # the figure without a mean left out, the others kept
    second = coll.numbers.iloc[0]
    assert second["sd"] == 0.0 and second["n"] == 1  # no spread; one sample


def _sorted_copies(series, mean, sd, n, way):
    """The regressions on sorted copies of every column, as pages.thinning judged them before."""
    order = np.lexsort((np.arange(len(series)), series))
    ordered, m, s, c, w = series[order], mean[order], sd[order], n[order], way[order]
    out = np.zeros(len(order), dtype=bool)
    if len(order) > 1:
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        first = np.repeat(w[starts], np.diff(np.r_[starts, len(ordered)]))
        pairs = thinning.regressed_pairs(m, s, c, first[1:] > 0)
        out[1:] = pairs & (ordered[1:] == ordered[:-1]) & (first[1:] != 0)
    return order, ordered, out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 400), st.integers(1, 6))
def test_regressions_in_slices_are_those_of_sorted_copies(seed, count, chunk) -> None:
    rng = np.random.default_rng(seed)
    series = rng.integers(0, 5, count)
    mean = rng.choice([1.0, 1.05, 0.9, 1.3, 0.5], count) * rng.uniform(0.99, 1.01, count)
    sd, n = rng.uniform(0, 0.05, count), rng.integers(1, 4, count).astype(float)
    way = rng.choice([-1, 0, 1], count).astype(np.int8)
    order, ordered, expected = _sorted_copies(series, mean, sd, n, way)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(thinning, "CHUNK", chunk)  # slices of a few figures: every edge crossed
        got = thinning.series_regressions(ordered, order, mean, sd, n, way)
    assert got.tolist() == expected.tolist()


def test_series_numbers_take_64_bits_past_32() -> None:
    run_group, line = np.array([0, 70_000]), np.array([0, 39_999])
    run, key = np.array([0, 1, 1]), np.array([1, 0, 1])
    small = series_of(np.array([0, 2]), np.array([0, 4]), 5, run, key)
    assert small.dtype == np.int32 and small.tolist() == [4, 10, 14]
    big = series_of(run_group, line, 40_000, run, key)
    assert big.dtype == np.int64 and big.tolist() == [39_999, 2_800_000_000, 2_800_039_999]


def _figure(mean: float, sd: float, n: int, direction: str) -> Figure:
    return Figure(0, "t", "c", {}, "rate", "", direction, n, mean, sd)


SIDE = st.tuples(
    st.sampled_from([0.0, 1.0, 1.01, 1.5, -2.0, 100.0, math.inf]),
    st.sampled_from([0.0, 0.001, 0.05, math.nan]),
    st.integers(0, 4),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(SIDE, SIDE, st.sampled_from(["higher", "lower", "unknown"])), max_size=8))
def test_pairs_decided_at_once_are_judged_as_one_by_one(pairs) -> None:
    """judge_pairs decides every interval in one call; judge() decides each on its own."""
    cases = [(_figure(*now, way), *before) for now, before, way in pairs]
    together = judge_pairs(cases)
    alone = [judge(current, mean, sd, n, None, advise=False) for current, mean, sd, n in cases]
    assert [(v.verdict, v.why) for v in together] == [(v.verdict, v.why) for v in alone]


def test_the_page_after_the_columns_are_dropped_is_the_page(tmp_path, monkeypatch) -> None:
    """bench dashboard finds the change points, drops the columns of every figure and renders the
    page from the figures it draws: the same page, its footer counting every figure."""
    monkeypatch.setattr(thinning, "POINTS_BUDGET", 1)  # 12 points a series: thinned to 8
    monkeypatch.setattr(render.time, "time", lambda: 1.75e9)
    coll = sources.load([_history(tmp_path / "h.db")])
    assert coll.thinned and coll.figure_count == 24
    whole = render.page(coll, "caramel dashboard", all_points="h.csv")
    marks = change_marks.find(coll)
    coll.drop_numbers()
    assert not len(coll.numbers) and coll.figure_count == 24
    dropped = "".join(render.page_parts(coll, "caramel dashboard", all_points="h.csv", marks=marks))
    assert dropped == whole
    assert "24 figures are too many for one page" in dropped
