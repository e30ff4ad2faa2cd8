"""The change-point search (consumers/history/changes_search.boundaries_of): ruptures' exact
penalised least-squares search of each series, the series of one length scaled together, against
ruptures called on each series alone: ruptures.KernelCPD(kernel="linear", min_size=3, jump=1).fit(x).predict(pen=...)
(deepcharles/ruptures, src/ruptures/detection/kernelcpd.py KernelCPD.predict, its C search
src/ruptures/detection/_detection/ekcpd_pelt_computation.c ekcpd_pelt_compute), run here on the
same scaled log figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.consumers.history.synthetic_changes import generate

from caramel.consumers.history import changes as ch
from caramel.consumers.history import changes_search as search
from caramel.vocabulary import Direction


def _scaled(values: np.ndarray) -> np.ndarray:
    """The figures as the search sees them: log, less the median, over the noise."""
    x = np.log(values)
    return (x - np.median(x)) / search._noise_rows(x[None, :])[0]


def _ruptures(values: np.ndarray) -> list[int]:
    ruptures = pytest.importorskip("ruptures")
    n = len(values)
    if n < 2 * search.MIN_SEGMENT:
        return []
    kernel = ruptures.KernelCPD(kernel="linear", min_size=search.MIN_SEGMENT, jump=1)
    found = kernel.fit(_scaled(values).reshape(-1, 1)).predict(pen=search.PENALTY * math.log(n))
    return [int(b) for b in found[:-1]]


def _series(seed: int, n: int, step: float, rounded: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    at = int(rng.integers(0, n + 1))
    values = 100 * np.exp(rng.normal(0, 0.03, n) + np.where(np.arange(n) >= at, step, 0.0))
    return np.round(values) if rounded else values


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 10_000),
            st.integers(2, 160),
            st.sampled_from([0.0, 0.02, 0.05, 0.3]),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_search_is_ruptures_segmentation_of_each_series(specs):
    """Each series' boundaries, searched among series of other lengths, are those ruptures finds
    for it alone (the same penalty, minimum segment and scaled figures)."""
    series = [_series(*spec) for spec in specs]
    assert search.boundaries_of(series) == [_ruptures(values) for values in series]


def test_a_series_is_searched_alike_alone_and_among_longer_and_shorter_ones():
    series = [_series(seed, n, 0.2, False) for seed, n in enumerate((7, 250, 40, 6, 5, 100, 99))]
    together = search.boundaries_of(series)
    assert together == [search.boundaries_of([values])[0] for values in series]
    assert together[4] == [] and any(together[1])


def test_a_steps_boundary_is_where_ruptures_puts_it():
    values = _series(4, 60, 0.3, False)
    assert search.boundaries_of([values])[0] == _ruptures(values) != []


def test_a_series_judged_among_many_finds_what_it_finds_alone():
    """changes.find tests every series' boundaries and moments at once (one array per length):
    each series' change points are those it has judged alone, series of other lengths beside it."""
    truth = generate(5, series=60, runs=40)
    at = np.arange(len(truth.runs))
    series = [
        ch.Series(name, np.asarray(v[: 20 + k % 21]), at[: 20 + k % 21], "1/s", Direction.HIGHER)
        for k, (name, v) in enumerate(truth.values.items())
    ]
    times = [f"t{i:04d}" for i in at]
    together, _ = ch.find(series, truth.runs, times, truth.provenance)
    alone = [c for one in series for c in ch.find([one], truth.runs, times, truth.provenance)[0]]
    assert sorted(together, key=repr) == sorted(alone, key=repr)
    assert len({c.series for c in together}) >= 5
