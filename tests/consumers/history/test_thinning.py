"""pages.thinning.thin finds each slice's extremes by reduceat over the sorted figures: it keeps
exactly the figures that sorting every figure by slice and value kept (the way it was written first)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.consumers.pages.thinning import thin


def _thin_by_sorting(series: np.ndarray, mean: np.ndarray, regressed: np.ndarray, per_series: int) -> np.ndarray:
    count = len(series)
    keep = np.zeros(count, dtype=bool)
    if not count:
        return keep
    starts = np.flatnonzero(np.r_[True, series[1:] != series[:-1]])
    lengths = np.diff(np.r_[starts, count])
    length = np.repeat(lengths, lengths)
    position = np.arange(count) - np.repeat(starts, lengths)
    keep |= (length <= per_series) | (position == 0) | (position == length - 1) | regressed
    slices = max(1, per_series // 2)
    piece = np.repeat(np.arange(len(starts)), lengths) * slices + position * slices // length
    order = np.lexsort((mean, piece))
    edges = np.r_[True, piece[order][1:] != piece[order][:-1]]
    keep[order[edges]] = True
    keep[order[np.r_[edges[1:], True]]] = True
    return keep


figures = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([1.0, 2.0, 2.0, 3.0, -1.5, 7.25]),
                             st.booleans()), max_size=300)


@settings(max_examples=300, deadline=None)
@given(figures, st.integers(1, 20))
@pytest.mark.slow
def test_thin_keeps_what_sorting_every_figure_kept(rows, per_series):
    rows.sort(key=lambda row: row[0])  # by series (the date order within one is the list's)
    series = np.array([r[0] for r in rows], dtype=np.int64)
    mean = np.array([r[1] for r in rows], dtype=float)
    regressed = np.array([r[2] for r in rows], dtype=bool)
    assert thin(series, mean, regressed, per_series).tolist() == _thin_by_sorting(series, mean, regressed,
                                                                                   per_series).tolist()


def test_a_long_series_keeps_its_first_last_and_each_slices_extremes():
    mean = np.array([5.0, 1.0, 9.0, 9.0, 4.0, 4.0, 1.0, 6.0, 2.0, 8.0])
    kept = thin(np.zeros(10, dtype=np.int64), mean, np.zeros(10, dtype=bool), 4)  # two slices of five
    assert np.flatnonzero(kept).tolist() == [0, 1, 3, 6, 9]  # first; low 1.0 and the later 9.0; low 1.0, high 8.0
