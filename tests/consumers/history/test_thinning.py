"""pages.thinning.thin finds each slice's extremes by reduceat over the sorted figures: it keeps
exactly the figures that sorting every figure by slice and value kept (the way it was written first)."""

from __future__ import annotations

from types import SimpleNamespace

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


# means near the band's edges (2 % apart), of either sign and 0, with spreads from none to wide
pairs = st.lists(
    st.tuples(st.sampled_from([100.0, 98.0, 102.0, 98.0392156862745, 102.00000001, 0.0, -50.0, 1e-300]),
              st.sampled_from([0.0, 0.0, 0.01, 0.5, 40.0]), st.integers(1, 4)),
    min_size=2, max_size=40)


@settings(max_examples=500, deadline=None)
@given(pairs, st.booleans())
def test_regressed_pairs_is_the_pages_verdict_pair_by_pair(figures, higher):
    """regressed_pairs judges by interval only the pairs whose ratio lies beyond the band on the
    worse side; it finds exactly the pairs pages.judging.judged calls regressed."""
    from caramel.consumers.pages.judging import judged
    from caramel.consumers.pages.thinning import regressed_pairs

    mean, sd, n = (np.array(column, dtype=float) for column in zip(*figures, strict=True))
    found = regressed_pairs(mean, sd, n, np.full(len(figures) - 1, higher))

    def figure(i):  # what judged reads of a page's figure (history.compare.Measured)
        return SimpleNamespace(mean=float(mean[i]), sd=float(sd[i]), n=int(n[i]),
                               direction="higher" if higher else "lower")

    expected = [judged(figure(i), figure(i - 1))[0] == "regressed" for i in range(1, len(figures))]
    assert found.tolist() == expected
