"""Confidence intervals (analyse/intervals.py): every quantile and interval is scipy's.

Expected values come from scipy itself, the reference here: `scipy.stats.t.ppf` (Student's t inverse
CDF, fractional degrees of freedom), `scipy.stats.t.interval` (the t interval of a mean) and
`scipy.stats.bootstrap` (BCa, the same seed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from caramel.stages.analyse.intervals import (
    BOOTSTRAP_SEED,
    interval,
    mean_interval,
    ratio_interval,
    relative_half_width,
    t_quantile,
)
from caramel.stages.spec.estimator import NAMES


def test_t_quantiles_are_scipys_at_fractional_and_large_degrees_of_freedom():
    """The old table floored df 7.99 to 7 (3.499) and used the normal's 2.576 past df 30."""
    assert t_quantile(0.99, 7.99) == pytest.approx(stats.t.ppf(0.995, 7.99), rel=1e-12)
    assert t_quantile(0.99, 7.99) == pytest.approx(3.3566, abs=1e-4)  # scipy 1.17: 3.356608009438969
    assert t_quantile(0.99, 31) == pytest.approx(stats.t.ppf(0.995, 31), rel=1e-12)
    assert t_quantile(0.99, 31) == pytest.approx(2.7440, abs=1e-4)  # not the normal's 2.576 (6 % below)
    assert t_quantile(0.95, np.array([2.5, 1e9])) == pytest.approx(stats.t.ppf(0.975, [2.5, 1e9]))


def test_the_t_interval_of_a_mean_is_scipys():
    samples = [207.1, 199.4, 231.0, 215.2]
    iv = interval(samples)
    low, high = stats.t.interval(0.99, len(samples) - 1, loc=np.mean(samples), scale=stats.sem(samples))
    assert (iv.low, iv.high) == (pytest.approx(low), pytest.approx(high))
    assert iv.level == 0.99 and iv.method == "t interval of the mean" and iv.label == "99 % t interval of the mean"
    assert iv.relative_half_width == pytest.approx((high - low) / 2 / np.mean(samples))
    assert relative_half_width(samples) == iv.relative_half_width
    assert mean_interval(float(np.mean(samples)), float(np.std(samples, ddof=1)), 4) == iv


def test_one_sample_has_no_interval_not_a_point():
    iv = interval([5.0])
    assert math.isnan(iv.low) and math.isnan(iv.high) and not iv.known and iv.estimate == 5.0
    assert math.isnan(iv.relative_half_width)


def test_a_trimmed_mean_and_a_median_get_scipys_bootstrap():
    samples = [10.2, 10.0, 9.9, 10.4, 13.0, 10.1, 9.8]
    iv = interval(samples, 0.95, "trimmed")
    trimmed = lambda x, axis=-1: np.sort(x, axis=axis)[..., 1:-1].mean(axis=axis)  # noqa: E731
    ref = stats.bootstrap((np.array(samples),), trimmed, confidence_level=0.95, vectorized=True,
                          rng=np.random.default_rng(BOOTSTRAP_SEED)).confidence_interval
    assert (iv.low, iv.high) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert iv.estimate == pytest.approx(np.mean(sorted(samples)[1:-1])) and "bootstrap" in iv.method
    assert interval(samples, 0.95, NAMES["milabench"]) == iv  # a step's Estimator names the same
    median = interval(samples, 0.95, "median")
    ref = stats.bootstrap((np.array(samples),), np.median, confidence_level=0.95, vectorized=True,
                          rng=np.random.default_rng(BOOTSTRAP_SEED)).confidence_interval
    assert (median.low, median.high) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert interval([1.0, 2.0, 3.0], estimator="trimmed").method == "t interval of the mean"  # under 5: no trim
    with pytest.raises(ValueError, match="estimator 'mode'"):
        interval(samples, estimator="mode")


def test_many_pooled_lines_are_bootstrapped_in_batches_to_the_same_interval(monkeypatch):
    """The pooled lines of many copies are resampled a batch at a time (intervals.BATCH_VALUES
    doubles), so memory stays bounded; scipy draws the same resamples, the interval is unchanged."""
    import caramel.stages.analyse.intervals as intervals

    samples = np.random.default_rng(3).normal(100.0, 5.0, 400)
    trimmed = lambda x, axis=-1: np.sort(x, axis=axis)[..., 1:-1].mean(axis=axis)  # noqa: E731
    ref = stats.bootstrap((samples,), trimmed, confidence_level=0.99, vectorized=True,
                          rng=np.random.default_rng(BOOTSTRAP_SEED)).confidence_interval
    monkeypatch.setattr(intervals, "BATCH_VALUES", 400 * 250)  # 250 resamples a batch
    batches = []
    scipys = stats.bootstrap

    def spied(*args, **kwargs):
        batches.append(kwargs.get("batch"))
        return scipys(*args, **kwargs)

    monkeypatch.setattr(stats, "bootstrap", spied)
    batched = interval(samples, estimator="trimmed")
    assert batches == [250]
    assert (batched.low, batched.high) == (pytest.approx(ref.low, rel=1e-12),
                                           pytest.approx(ref.high, rel=1e-12))


def test_the_ratio_interval_is_the_delta_method_on_its_log_with_welch_df():
    """Expected: log(mc/mb) ± t.ppf(0.995, ν)·se, se² = cv_c²/n_c + cv_b²/n_b, ν Welch's (scipy's t)."""
    cur, base = np.array([103.0, 101.0, 104.0, 102.0]), np.array([100.0, 99.0, 101.0, 100.5, 99.5])
    a = (cur.std(ddof=1) / cur.mean()) ** 2 / 4
    b = (base.std(ddof=1) / base.mean()) ** 2 / 5
    df = (a + b) ** 2 / (a ** 2 / 3 + b ** 2 / 4)
    half = stats.t.ppf(0.995, df) * math.sqrt(a + b)
    r = ratio_interval(cur.mean(), cur.std(ddof=1), 4, base.mean(), base.std(ddof=1), 5)
    assert r.ratio == pytest.approx(cur.mean() / base.mean()) and r.df == pytest.approx(df)
    assert (r.low, r.high) == (pytest.approx(r.ratio * math.exp(-half)), pytest.approx(r.ratio * math.exp(half)))
    # the reciprocal ratio (the baseline over the current) has exactly the reciprocal interval
    back = ratio_interval(base.mean(), base.std(ddof=1), 5, cur.mean(), cur.std(ddof=1), 4)
    assert (back.low, back.high) == (pytest.approx(1 / r.high), pytest.approx(1 / r.low))
    one = ratio_interval(103.0, math.nan, 1, base.mean(), base.std(ddof=1), 5)
    assert one.ratio == pytest.approx(103.0 / base.mean()) and math.isnan(one.low)  # one sample: no interval
