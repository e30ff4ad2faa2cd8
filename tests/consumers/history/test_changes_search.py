"""The change-point search (consumers/history/changes_search.boundaries_of): the exact penalised
least-squares segmentation of many series at once, against ruptures, the library whose search it
replaces: ruptures.KernelCPD(kernel="linear", min_size=3, jump=1).fit(x).predict(pen=...)
(deepcharles/ruptures, src/ruptures/detection/kernelcpd.py KernelCPD.predict, its C search
src/ruptures/detection/_detection/ekcpd_pelt_computation.c ekcpd_pelt_compute), run here on the
same scaled log figures."""

from __future__ import annotations

import math
import subprocess
import sys

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
    return (x - np.median(x)) / search._noise(x)


def _ruptures(values: np.ndarray) -> list[int]:
    ruptures = pytest.importorskip("ruptures")
    n = len(values)
    if n < 2 * search.MIN_SEGMENT:
        return []
    kernel = ruptures.KernelCPD(kernel="linear", min_size=search.MIN_SEGMENT, jump=1)
    found = kernel.fit(_scaled(values).reshape(-1, 1)).predict(pen=search.PENALTY * math.log(n))
    return [int(b) for b in found[:-1]]


def _penalised_cost(values: np.ndarray, cuts: list[int]) -> float:
    x, edges = _scaled(values), [0, *cuts, len(values)]
    pairs = zip(edges[:-1], edges[1:], strict=True)
    within = sum(float(((x[a:b] - x[a:b].mean()) ** 2).sum()) for a, b in pairs)
    return within + len(cuts) * search.PENALTY * math.log(len(values))


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
def test_the_search_is_ruptures_exact_segmentation(specs):
    """Each series' boundaries are ruptures' (the same penalty, minimum segment and figures);
    where they differ, ours costs less: ruptures' pruning (a start dropped once its cost passes the
    best) is exact without a minimum segment length, and with one it can drop the optimum on
    rounded figures (about 1 series in 3,000 of this kind)."""
    series = [_series(*spec) for spec in specs]
    for values, ours in zip(series, search.boundaries_of(series), strict=True):
        theirs = _ruptures(values)
        if ours != theirs:
            assert _penalised_cost(values, ours) < _penalised_cost(values, theirs) - 1e-9


@pytest.mark.parametrize("figures_per_batch", [512 * 256, 300])
def test_a_series_is_searched_alike_alone_and_among_longer_and_shorter_ones(
    figures_per_batch, monkeypatch
):
    # a batch pads the shorter series: a segmentation up to a series' end reads nothing after it;
    # 300 figures a batch: the long series alone, the short ones several together
    monkeypatch.setattr(search, "SEARCHED_TOGETHER", figures_per_batch)
    series = [_series(seed, n, 0.2, False) for seed, n in enumerate((7, 250, 40, 6, 5, 100, 99))]
    together = search.boundaries_of(series)
    assert together == [search.boundaries(values) for values in series]
    assert together[4] == [] and any(together[1])


def test_a_steps_boundary_is_where_ruptures_puts_it():
    values = _series(4, 60, 0.3, False)
    assert search.boundaries(values) == _ruptures(values) != []


def test_the_dashboards_change_points_load_neither_ruptures_nor_scipy_stats():
    """The search needs no ruptures (its import loads scipy.stats: 0.4 s of a dashboard)."""
    script = (
        "import sys, numpy as np\n"
        "from caramel.consumers.history import changes as ch\n"
        "from caramel.vocabulary import Direction\n"
        "noise = np.random.default_rng(1).normal(0, 0.02, 40)\n"
        "v = 100 * np.exp(noise + 0.2 * (np.arange(40) > 20))\n"
        "runs = [f'r{i}' for i in range(40)]\n"
        "s = ch.Series(('b', 's', 'c', 'f'), v, np.arange(40), 's', Direction.LOWER)\n"
        "found, _ = ch.find([s], runs, runs, {})\n"
        "assert [c.index for c in found] == [21], found\n"
        "print(sorted(m for m in ('ruptures', 'scipy.stats') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


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
