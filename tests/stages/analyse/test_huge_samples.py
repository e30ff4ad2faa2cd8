"""Repeats near a double's limit (issue 36): their mean is finite and no numpy warning is printed."""

from __future__ import annotations

import math
import warnings

from caramel.stages.analyse.convergence import half_width_pct
from caramel.stages.analyse.estimators import summarise
from caramel.stages.analyse.intervals import interval
from caramel.stages.spec.estimator import DEFAULT


def test_repeats_of_a_figure_near_the_double_limit_have_a_finite_mean() -> None:
    """docs/history.md, "bench export, bench import" (samples near a double's limit are stored as
    they are: the mean of [1.7e308, 1.7e308] is 1.7e308): `bench result` on such repeats showed
    `inf`, printed numpy's overflow warnings and the figure never reached the history."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarning would fail the test
        summary = summarise([1.7e308, 1.7e308], DEFAULT)
        assert (summary.mean, summary.sd) == (1.7e308, 0.0)
        spread = summarise([1.7e308, -1.7e308], DEFAULT)
        assert spread.mean == 0.0 and math.isclose(spread.sd, math.sqrt(2) * 1.7e308)
        assert interval([1.7e308, 1.7e308]).estimate == 1.7e308
        assert 0 < half_width_pct([1.7e308, 1.6e308]) < math.inf
