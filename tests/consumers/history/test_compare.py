"""The verdict rule: the ratio's interval against a threshold's band, one sample only against a given
threshold, direction (docs/history.md, "bench compare")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from caramel.consumers.history.compare import (
    MOST_REPETITIONS,
    Call,
    compare_targets,
    decide,
    judge,
    repetitions_needed,
    way_of,
)
from caramel.consumers.history.metrics import Metric, direction
from caramel.stages.analyse.intervals import ratio_interval


def metric(samples, name="rate", unit=None):
    unit = {"rate": "items/s", "elapsed": "s"}.get(name, "") if unit is None else unit
    return Metric("t", {"n": "1"}, name, unit, direction(name, unit), list(samples))


def test_noise_too_wide_for_the_band_cannot_judge_and_says_how_many_repetitions_would():
    """Before: "within noise" (Welch's t not significant); the ratio's interval (±6 %) reaches past ±2 %."""
    verdict = judge(metric([100, 104, 96, 101, 99]), 101.0, 3.0, 5, None)
    assert verdict.verdict == "cannot judge" and verdict.needed and verdict.needed > 5
    assert "repetitions per side would decide" in verdict.why


def test_a_verdict_without_advice_is_the_same_verdict_without_the_repetitions_search():
    """The page's verdicts (pages.judging) leave out what they never show: the repetitions that
    would decide an undecided one (a search of ratio intervals, a thousand judgements a page)."""
    for current, base in ((metric([100, 104, 96, 101, 99]), (101.0, 3.0, 5)), (metric([96]), (100.0, 0.0, 1))):
        advised, plain = judge(current, *base, None), judge(current, *base, None, advise=False)
        assert advised.verdict == plain.verdict == "cannot judge" and advised.needed and plain.needed is None
        assert (plain.ratio, plain.diff_pct) == (advised.ratio, advised.diff_pct)
        assert plain.ratio_low == advised.ratio_low or math.isnan(plain.ratio_low) == math.isnan(advised.ratio_low)
        assert "repetitions" not in plain.why and advised.why.startswith(plain.why)


def test_clear_drop_in_throughput_is_a_regression_and_a_rise_an_improvement():
    assert judge(metric([80, 81, 79, 80, 80]), 100.0, 1.0, 5, None).verdict == "regressed"
    assert judge(metric([120, 121, 119, 120, 120]), 100.0, 1.0, 5, None).verdict == "improved"


def test_time_is_better_lower():
    slower = metric([1.3, 1.31, 1.29], name="elapsed", unit="s")
    assert slower.direction == "lower"
    assert judge(slower, 1.0, 0.01, 3, None).verdict == "regressed"


def test_significant_but_tiny_change_is_within_the_threshold():
    assert judge(metric([100.5, 100.5, 100.5]), 100.0, 0.0001, 3, None).verdict == "within noise"


def test_single_samples_are_judged_only_against_an_explicit_threshold():
    """Before: against a default 5 %; now without --threshold one sample cannot judge (no spread)."""
    assert judge(metric([96]), 100.0, 0.0, 1, None).verdict == "cannot judge"
    assert judge(metric([94]), 100.0, 0.0, 1, None).verdict == "cannot judge"
    assert judge(metric([96]), 100.0, 0.0, 1, 5).verdict == "within noise"  # ratio 0.96 inside [1/1.05, 1.05]
    assert judge(metric([94]), 100.0, 0.0, 1, 5).verdict == "regressed"
    assert judge(metric([94]), 100.0, 0.0, 1, 10).verdict == "within noise"
    assert judge(metric([94]), float("nan"), 0.0, 0, None).verdict == "no baseline"


def test_directions():
    assert direction("Tokens/second") == "higher"
    assert direction("Time/iteration(s)") == "lower"
    assert direction("Avg_TFLOPs/GPU") == "higher"
    assert direction("Energy(Wh)") == "lower"
    assert direction("Tokens/J") == "higher"
    assert direction("runtime", "s") == "lower"


def test_equal_values_are_never_a_change_even_zero():
    """A run compared with itself: a metric 0 on both sides was 'regressed' (issue 12)."""
    for samples, base, sd, n in (([0.0], 0.0, 0.0, 1), ([0.0, 0.0], 0.0, 0.0, 2), ([5.0], 5.0, 0.0, 1),
                                 ([1.0, 3.0], 2.0, 1.4142135623730951, 2)):
        for name in ("rate", "elapsed"):
            verdict = judge(metric(samples, name=name), base, sd, n, None)
            assert (verdict.verdict, verdict.diff_pct) == ("within noise", 0.0), (samples, name)


def test_a_zero_baseline_has_no_ratio_and_cannot_judge():
    """Before: any change from 0 counted; a ratio to 0 (and a % of 0) does not exist."""
    slower = judge(metric([1.0], name="elapsed", unit="s"), 0.0, 0.0, 1, 5)
    assert slower.verdict == "cannot judge" and slower.diff_pct != slower.diff_pct  # NaN: no % of 0
    assert "the baseline is 0" in slower.why
    noisy = judge(metric([0.0, 0.1, 0.2], name="elapsed"), 0.0, 0.1, 3, None)
    assert noisy.verdict == "cannot judge" and "the baseline is 0" in noisy.why


def test_a_change_of_a_figure_of_unknown_direction_cannot_be_judged():
    """Never improved/regressed by a guess (issue 21): the verdict says why and what to declare."""
    for samples, base, sd, n in (([120.0], 100.0, 0.0, 1), ([120, 121, 119], 100.0, 1.0, 3), ([80.0], 100.0, 0.0, 1)):
        unknown = judge(metric(samples, name="performance", unit=""), base, sd, n, 5)
        assert unknown.verdict == "cannot judge", unknown
        assert "direction unknown" in unknown.why and "direction: lower|higher" in unknown.why
    same = judge(metric([100.0, 101.0, 99.0], name="performance", unit=""), 100.0, 1.0, 3, None)
    assert same.verdict == "within noise"  # no change to judge: the direction does not matter


def test_one_sample_is_no_spread_not_a_spread_of_0():
    one = metric([120.0], name="latency", unit="ms")
    assert one.direction == "lower" and one.sd != one.sd and one.sd_pct != one.sd_pct  # NaN, not 0
    verdict = judge(one, 100.0, float("nan"), 1, 5)
    assert verdict.verdict == "regressed" and "single sample (both sides): no spread" in verdict.why
    assert "single sample (the run)" in judge(one, 100.0, 1.0, 5, None).why
    assert "single sample (the baseline)" in judge(metric([120.0, 121.0], "latency", "ms"), 100.0, math.nan, 1, None).why


def test_a_latency_rise_of_20_percent_is_a_regression_and_a_throughput_rise_an_improvement():
    assert judge(metric([120.0], name="performance", unit="ms"), 100.0, math.nan, 1, 5).verdict == "regressed"
    assert judge(metric([120.0], name="performance", unit="samples/s"), 100.0, math.nan, 1, 5).verdict == "improved"


def test_targets_judge_the_stored_direction():
    latency = metric([120.0], name="performance", unit="ms")
    assert [v.verdict for v in compare_targets([latency], {"performance": 100}, None)] == ["regressed"]
    assert "against a target" in compare_targets([latency], {"performance": 100}, None)[0].why


def test_a_target_without_a_number_is_an_error_naming_the_figure():
    """`{"threshold": 5}` without a value, or a word, stopped `bench compare` with a TypeError before."""
    import pytest

    latency = metric([120.0], name="performance", unit="ms")
    for target in ({"threshold": 5}, "fast", {"value": 1, "threshold": "x"}, True):
        with pytest.raises(ValueError, match="the target of 'performance' is .*, not a number"):
            compare_targets([latency], {"performance": target}, None)
    assert [v.verdict for v in compare_targets([latency], {"performance": "100"}, None)] == ["regressed"]


@dataclass
class Summary:
    """A figure as `repetitions_needed` reads it (history.compare.Measured)."""

    mean: float
    sd: float
    n: int
    direction: str


@given(mean=st.floats(0.1, 100), change=st.floats(-0.2, 0.2), cv=st.floats(1e-4, 0.5),
       base_cv=st.floats(1e-4, 0.5), threshold=st.sampled_from([1.0, 2.0, 5.0]),
       better=st.sampled_from(["higher", "lower", "unknown"]))
def test_the_repetitions_needed_are_the_fewest_that_decide(
        mean, change, cv, base_cv, threshold, better):
    """The counts are tried many at a time (numpy): the answer is still the fewest n per side whose
    interval decides, n - 1 not (the interval only narrows as n grows), or None past a million."""
    current = Summary(mean * (1 + change), mean * (1 + change) * cv, 3, better)
    base_mean = mean
    needed = repetitions_needed(current, base_mean, base_mean * base_cv, threshold)
    cur_sd = abs(current.mean) * (current.sd / abs(current.mean))
    base_sd = abs(base_mean) * (base_mean * base_cv / abs(base_mean))
    way = way_of(current.direction)

    def decides(n: int) -> bool:
        r = ratio_interval(current.mean, cur_sd, n, base_mean, base_sd, n)
        return int(decide(r.low, r.high, threshold, way)) != Call.UNDECIDED

    if needed is None:
        assert not decides(2 ** math.ceil(math.log2(MOST_REPETITIONS)))
    else:
        assert decides(needed) and (needed == 2 or not decides(needed - 1))
