"""How closely the mean of a figure's repeats is known: the half-width of its confidence interval.

`bench run --repeat auto` (docs/cli.md) repeats a run until this half-width, as a percentage of the
mean, is within its target for every figure. Student's t comes from the caramel-wide intervals
module (`t_quantile`); the width is taken relative to the mean before it is scaled, so samples near
the largest double give a finite width where the interval's bounds would overflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from caramel.stages.analyse.estimators import mean_sd
from caramel.stages.analyse.intervals import t_quantile

CONFIDENCE = 0.95


def half_width_pct(samples: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """The half-width of Student's t interval of the mean of `samples` at `confidence`
    (n - 1 degrees of freedom), in % of |mean|: 0 when the samples do not spread, inf with fewer
    than two samples or a mean of 0 with a spread (no relative width to judge)."""
    values = np.asarray(samples, dtype=float)
    if len(values) < 2:
        return math.inf
    if (
        values.min() == values.max()
    ):  # not np.std: the mean of equal floats may differ in its last bit
        return 0.0
    mean, spread = mean_sd(values, 1)
    if mean == 0.0:
        return math.inf
    quantile = float(t_quantile(confidence, len(values) - 1))
    # the ratio first: no overflow
    return 100.0 * quantile * (spread / abs(mean)) / math.sqrt(len(values))
