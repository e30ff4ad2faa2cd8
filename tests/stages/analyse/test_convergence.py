"""analyse.convergence.half_width_pct: the 95 % Student's t interval of the mean, in % of the mean,
checked against scipy's own interval (scipy/stats/_distn_infrastructure.py, rv_continuous.interval
of scipy.stats.t with loc=mean and scale=the standard error)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from caramel.stages.analyse.convergence import half_width_pct


def scipy_half_width_pct(samples: list[float]) -> float:
    mean = float(np.mean(samples))
    low, high = stats.t.interval(0.95, len(samples) - 1, loc=mean, scale=stats.sem(samples))
    return 100.0 * (high - low) / 2 / abs(mean)


def test_three_samples() -> None:
    # mean 2, sd 1, t(0.975; 2 df) = 4.3027: 4.3027 / sqrt(3) / 2 = 124.2 %
    assert half_width_pct([1.0, 2.0, 3.0]) == pytest.approx(scipy_half_width_pct([1.0, 2.0, 3.0]))
    assert half_width_pct([1.0, 2.0, 3.0]) == pytest.approx(124.2069, abs=1e-3)


@given(st.lists(st.floats(min_value=1.0, max_value=1e6), min_size=2, max_size=40))
def test_matches_scipys_interval(samples: list[float]) -> None:
    if min(samples) == max(samples):
        assert half_width_pct(samples) == 0.0
    else:
        assert half_width_pct(samples) == pytest.approx(
            scipy_half_width_pct(samples), rel=1e-9, abs=1e-9
        )


def test_no_spread_has_converged_and_one_sample_has_no_interval() -> None:
    assert half_width_pct([0.1, 0.1, 0.1]) == 0.0
    assert half_width_pct([5.0]) == math.inf and half_width_pct([]) == math.inf
    assert half_width_pct([-1.0, 1.0]) == math.inf  # a mean of 0: no relative width
