"""Confidence intervals of a figure's estimate and of the ratio of two figures, from scipy.

    iv = interval([207.1, 199.4, 231.0])                  # 99 % t interval of the mean
    iv.low, iv.high, iv.method, iv.level, iv.relative_half_width
    interval(samples, estimator="trimmed")                # bootstrap (scipy.stats.bootstrap)

Every quantile is scipy's (Student's t for fractional degrees of freedom: Welch's), never a table.
The mean's interval is Student's t interval, mean ± t(1 - (1 - level)/2, n - 1)·sd/√n; a trimmed
mean's or a median's (no closed form) is scipy's BCa bootstrap over the samples, with a fixed seed
so a table shows the same interval each time. One sample (or none) has no spread, so no interval:
low and high are NaN ("cannot judge spread"), never the point itself.

`ratio_interval` is the interval `bench compare` and the pages decide by (docs/history.md): the
ratio current/baseline of two means, by the delta method on log(ratio) with Welch's degrees of
freedom. The log makes it symmetric under inversion: a rate's interval is the reciprocal of its
time's, so a time and its rate are never judged apart. It needs only mean, sd and n per side,
which is all the history's columns (and the pages) hold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from caramel.stages.spec.estimator import TRIM_FROM, Estimator, Samples

if TYPE_CHECKING:
    import numpy as np

LEVEL = (
    0.99  # the confidence of every interval caramel prints, as the 99 % of bench compare's decision
)
T_MEAN = "t interval of the mean"
BOOTSTRAP = "BCa bootstrap over the samples"
RATIO_METHOD = "delta method on log(ratio of means), Welch df"
ESTIMATORS = (
    "mean",
    "trimmed",
    "median",
)  # what `interval` estimates (an Estimator: mean or trimmed)
BOOTSTRAP_SEED = 20260101  # a fixed seed: the same samples give the same interval in every table
RESAMPLES = 9999  # scipy.stats.bootstrap's default
# samples resampled at once (80 MB of doubles): the pooled lines of many copies would otherwise be
# RESAMPLES × n doubles at once; scipy draws the same resamples in batches
BATCH_VALUES = 10_000_000


@dataclass(frozen=True)
class Interval:
    low: float  # NaN: no spread to judge by (one sample)
    high: float
    method: str  # how it was made: T_MEAN, "BCa bootstrap over the samples (trimmed mean)", ...
    level: float = LEVEL  # its confidence, 0.99
    estimate: float = math.nan  # the estimate it is an interval of

    @property
    def known(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    @property
    def relative_half_width(self) -> float:
        """Half the interval's width relative to |estimate| (0.02: ±2 %); NaN with no interval or an
        estimate of 0 (what `--repeat auto` stops on)."""
        if not self.known or not self.estimate:
            return math.nan
        return (self.high - self.low) / 2 / abs(self.estimate)

    @property
    def label(self) -> str:
        """`99 % t interval of the mean`: what a table's caption says."""
        return f"{100 * self.level:g} % {self.method}"


def t_quantile(level: float, df: Any) -> Any:
    """The two-sided `level` quantile of Student's t for `df` degrees of freedom (fractional, or an
    array of them): scipy.stats.t.ppf(1 - (1 - level)/2, df), through scipy.special.stdtrit (the
    function t.ppf calls), which spares `bench compare` and the pages scipy.stats' 0.6 s import."""
    from scipy.special import stdtrit

    return stdtrit(df, 0.5 + level / 2)


def mean_interval(mean: float, sd: float, n: int, level: float = LEVEL) -> Interval:
    """Student's t interval of a mean from its sd and n (what the history stores: computed on
    read)."""
    if n < 2 or not math.isfinite(mean) or math.isnan(sd):
        return Interval(math.nan, math.nan, T_MEAN, level, mean)
    half = float(t_quantile(level, n - 1)) * sd / math.sqrt(n)
    return Interval(mean - half, mean + half, T_MEAN, level, mean)


def _estimator_name(estimator: str | Estimator) -> str:
    if isinstance(estimator, Estimator):
        return "trimmed" if estimator.samples is Samples.TRIMMED else "mean"
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator {estimator!r} is none of {', '.join(ESTIMATORS)}")
    return estimator


def interval(
    samples: Iterable[float], level: float = LEVEL, estimator: str | Estimator = "mean"
) -> Interval:
    """The `level` confidence interval of the estimate of `samples`: Student's t for the mean,
    scipy's bootstrap for a trimmed mean (the min and the max dropped from TRIM_FROM samples on, as
    spec.estimator's) or a median. NaN bounds with fewer than two samples."""
    import numpy as np

    name = _estimator_name(estimator)
    values = np.asarray(list(samples), dtype=float)
    if name == "trimmed" and values.size < TRIM_FROM:
        name = "mean"  # nothing is trimmed below TRIM_FROM samples: the plain mean, its t interval
    if name == "mean":
        from caramel.stages.analyse.estimators import mean_sd

        mean, sd = mean_sd(values, 1)
        return mean_interval(mean, sd, int(values.size), level)
    statistic = _trimmed_mean if name == "trimmed" else np.median
    estimate = float(statistic(values, axis=-1))
    method = f"{BOOTSTRAP} ({'trimmed mean' if name == 'trimmed' else 'median'})"
    if np.ptp(values) == 0:  # every sample equal: no spread, the bootstrap's interval is the point
        return Interval(estimate, estimate, method, level, estimate)
    from scipy.stats import bootstrap

    result = bootstrap(
        (values,),
        statistic,
        confidence_level=level,
        n_resamples=RESAMPLES,
        batch=max(1, BATCH_VALUES // values.size),
        vectorized=True,
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return Interval(low, high, method, level, estimate)


def _trimmed_mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean without the smallest and the largest sample (spec.estimator's `trimmed`)."""
    import numpy as np

    ordered = np.sort(values, axis=axis)
    kept: np.ndarray = np.take(ordered, range(1, ordered.shape[axis] - 1), axis=axis)
    return np.asarray(kept.mean(axis=axis))


COPIES_SUM = "t interval of the mean of the copies' figures × copies"


def copies_interval(
    copies: Sequence[Iterable[float]], aggregate: str, estimator: Estimator, level: float = LEVEL
) -> Interval:
    """The interval of a copies aggregate (report/copies.py, estimators.pool) from each counted
    copy's lines. `mean` (milabench's perf, the estimate over the lines of every copy pooled): the
    `interval` of the pooled lines under the step's estimator (t for a mean, the bootstrap for a
    trimmed one). `sum` (the node's throughput, milabench's score): the sum of the N copies'
    figures is N × their mean, so its interval is N × the t interval of the mean of the copies'
    figures (the copies are N draws of one device's figure; one copy: no interval)."""
    from caramel.stages.analyse.estimators import summarise

    lists = [list(lines) for lines in copies]
    if aggregate != "sum":
        return interval([x for lines in lists for x in lines], level, estimator)
    figures = [summarise(lines, estimator).mean for lines in lists]
    of_mean = interval(figures, level, "mean")
    count = len(figures)
    return Interval(
        count * of_mean.low, count * of_mean.high, COPIES_SUM, level, count * of_mean.estimate
    )


def relative_half_width(
    samples: Iterable[float], level: float = LEVEL, estimator: str | Estimator = "mean"
) -> float:
    """Half the width of the samples' interval relative to their estimate (NaN: one sample)."""
    return interval(samples, level, estimator).relative_half_width


@dataclass(frozen=True)
class Ratio:
    """The ratio current/baseline and its interval, per pair (numpy arrays, or floats for one
    pair)."""

    ratio: Any
    low: Any  # NaN where a side has fewer than two samples and both have a spread to judge by
    high: Any
    df: Any  # Welch's degrees of freedom (NaN: no spread on either side)
    level: float = LEVEL
    method: str = RATIO_METHOD


def ratio_interval(
    cur_mean: Any,
    cur_sd: Any,
    cur_n: Any,
    base_mean: Any,
    base_sd: Any,
    base_n: Any,
    level: float = LEVEL,
) -> Ratio:
    """The ratio of the means current/baseline with its `level` interval, for numbers or arrays.

    Both means positive (times, rates): log(ratio) ± t·se, se² = cv_c²/n_c + cv_b²/n_b
    (cv = sd/mean, the delta method), t at Welch's degrees of freedom of those two terms.
    Otherwise (a mean of 0 or below) the relative change 1 + (c - b)/|b| ± t·se with the delta
    method's se of c/b. A side with sd 0 adds nothing (a target: sd 0, n infinite); a side of
    one sample leaves the interval NaN. A baseline of 0 has no ratio (NaN)."""
    import numpy as np

    mc, sc, nc = (np.asarray(x, dtype=float) for x in (cur_mean, cur_sd, cur_n))
    mb, sb, nb = (np.asarray(x, dtype=float) for x in (base_mean, base_sd, base_n))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        positive = (mc > 0) & (mb > 0)
        ratio = np.where(positive, mc / mb, 1 + (mc - mb) / np.abs(mb))
        ratio = np.where(mb == 0, np.nan, ratio)
        # the two terms of the squared standard error of log(ratio) (of the ratio: not both > 0)
        a = np.where(positive, (sc / mc) ** 2 / nc, (sc / mb) ** 2 / nc)
        b = np.where(positive, (sb / mb) ** 2 / nb, (mc * sb / mb**2) ** 2 / nb)
        a, b = np.where(sc == 0, 0.0, a), np.where(sb == 0, 0.0, b)
        a, b = (
            np.where(nc < 2, np.nan, a),
            np.where(nb < 2, np.nan, b),
        )  # one sample: no spread, not sd 0
        se = np.sqrt(a + b)
        below = np.where(a > 0, a**2 / (nc - 1), 0.0) + np.where(b > 0, b**2 / (nb - 1), 0.0)
        df = np.where(below > 0, (a + b) ** 2 / below, np.nan)
        half = np.where(se > 0, t_quantile(level, df) * se, 0.0)
        half = np.where(np.isnan(se), np.nan, half)
        low = np.where(positive, ratio * np.exp(-half), ratio - half)
        high = np.where(positive, ratio * np.exp(half), ratio + half)
    if np.ndim(ratio) == 0:
        return Ratio(float(ratio), float(low), float(high), float(df), level)
    return Ratio(ratio, low, high, df, level)
