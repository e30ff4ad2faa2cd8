"""Issue 34, statistics that decide: verdicts from the interval of the ratio current/baseline.

Expected quantiles are scipy's (`scipy.stats.t.ppf`); the rule is docs/history.md's ("bench compare"):
regressed/improved when the ratio's whole 99 % interval lies beyond the band ±threshold on the bad/good
side, within noise when it lies wholly inside, else cannot judge with the repetitions that would decide;
one sample is judged only against an explicit threshold."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from tests.run_bench import bench

from caramel.consumers.history.compare import judge, judge_pairs
from caramel.consumers.history.metrics import Metric
from caramel.consumers.pages.judging import judged
from caramel.consumers.pages.sources import Figure
from caramel.stages.analyse.intervals import ratio_interval


@dataclass
class Measured:
    """A figure as `judge` reads it: mean, sd, n and direction (a Metric or a page's Figure)."""

    mean: float
    sd: float
    n: int
    direction: str = "lower"


def samples_of(mean: float, sd: float, n: int) -> list[float]:
    """n samples with exactly this mean and sd (ddof 1)."""
    z = np.arange(n) - (n - 1) / 2
    return list(mean + sd * z / z.std(ddof=1))


def metric(samples, name="elapsed", unit="s", way="lower") -> Metric:
    return Metric("t", {"n": "1"}, name, unit, way, list(samples))


def test_welch_decisions_at_df_7_99_use_scipys_quantile_not_the_floored_one():
    """df 7.99: scipy's t is 3.357 (the old table floored it to df 7: 3.499). A ratio whose lower
    bound clears the 2 % band with 3.357 but not with 3.499 is a regression."""
    base_cv, cur_cv = 0.01036026, 0.01  # Welch's df of the two relative spreads (n = 5 each): 7.99
    se = math.sqrt(cur_cv ** 2 / 5 + base_cv ** 2 / 5)
    ratio = 1.02 * math.exp(3.43 * se)  # between the two quantiles
    current = Measured(100.0 * ratio, 100.0 * ratio * cur_cv, 5)
    verdict = judge(current, 100.0, 100.0 * base_cv, 5, None)
    assert ratio_interval(current.mean, current.sd, 5, 100.0, 100.0 * base_cv, 5).df == pytest.approx(7.99, abs=1e-3)
    assert verdict.verdict == "regressed" and verdict.ratio_low > 1.02
    assert verdict.ratio_low == pytest.approx(ratio * math.exp(-stats.t.ppf(0.995, 7.99) * se))
    assert ratio * math.exp(-3.499 * se) < 1.02  # the floored table's bound would not have cleared the band


def test_welch_decisions_at_df_31_use_scipys_quantile_not_the_normals():
    """df 31 (32 repeats against a target, which has no spread): scipy's 2.744, not the normal's 2.576,
    which was 6 % too lenient: this ratio's interval still reaches into the band."""
    cv = 0.01
    se = cv / math.sqrt(32)
    ratio = 1.02 * math.exp(2.66 * se)  # between 2.576 and 2.744
    current = Measured(100.0 * ratio, 100.0 * ratio * cv, 32)
    verdict = judge(current, 100.0, math.nan, 1, 2.0, target=True)
    assert verdict.verdict == "cannot judge" and verdict.ratio_low < 1.02 < ratio
    assert verdict.ratio_low == pytest.approx(ratio * math.exp(-stats.t.ppf(0.995, 31) * se))
    assert ratio * math.exp(-2.576 * se) > 1.02  # the normal's bound would have called it regressed
    assert verdict.needed and verdict.needed > 32


@pytest.mark.parametrize(("current", "word"), [
    ([90.0, 91.0, 89.0, 90.5, 89.5], "regressed"),  # 10 % less throughput, tight
    ([110.0, 111.0, 109.0, 110.5, 109.5], "improved"),
    ([100.3, 100.1, 99.9, 100.0, 99.9], "within noise"),
    ([103.0, 99.0, 106.0, 101.0, 97.0], "cannot judge"),  # +1.2 %, interval ±4.5 %: reaches both
])
def test_the_ratio_interval_decides_on_crafted_samples(current, word):
    base = metric([100.0, 100.5, 99.5, 100.2, 99.8], "rate", "items/s", "higher")
    now = metric(current, "rate", "items/s", "higher")
    verdict = judge(now, base.mean, base.sd, base.n, None)
    assert verdict.verdict == word, verdict.why
    assert verdict.ratio == pytest.approx(now.mean / base.mean)
    assert verdict.ratio_low < verdict.ratio < verdict.ratio_high
    assert "[" in verdict.why and "(99 %)" in verdict.why
    assert (verdict.needed is not None) == (word == "cannot judge")


def test_the_repetitions_needed_decide_at_the_same_spread():
    base, now = metric([100.0, 100.5, 99.5, 100.2, 99.8]), metric([103.0, 99.0, 106.0, 101.0, 97.0])
    undecided = judge(now, base.mean, base.sd, base.n, None)
    needed = undecided.needed
    assert undecided.verdict == "cannot judge" and needed and 5 < needed < 1000
    assert f"about {needed} repetitions per side would decide" in undecided.why
    more, base_more = metric(samples_of(now.mean, now.sd, needed)), metric(samples_of(base.mean, base.sd, needed))
    assert judge(more, base_more.mean, base_more.sd, needed, None).verdict == "within noise"  # +1.2 % < 2 %
    fewer, base_fewer = (metric(samples_of(m.mean, m.sd, needed - 1)) for m in (now, base))
    assert judge(fewer, base_fewer.mean, base_fewer.sd, needed - 1, None).verdict == "cannot judge"


def test_one_sample_a_side_cannot_judge_without_a_threshold_and_the_page_says_the_same():
    now, before = metric([106.0]), metric([100.0])
    verdict = judge(now, before.mean, before.sd, before.n, None)
    assert verdict.verdict == "cannot judge" and "explicit --threshold" in verdict.why
    assert judge(now, before.mean, before.sd, before.n, 5).verdict == "regressed"
    assert judge(now, before.mean, before.sd, before.n, 10).verdict == "within noise"
    figures = [Figure(i, "t", "n=1", {"n": "1"}, "elapsed", "s", "lower", 1, m.mean, math.nan)
               for i, m in enumerate((now, before))]
    assert judged(figures[0], figures[1]) == ("cannot judge", pytest.approx(6.0))


@pytest.mark.parametrize(("times", "base_times", "threshold"), [
    ([1.052], [1.0], 5.0),  # +5.2 % time, -4.9 % rate: the old rule called the time regressed, the rate noise
    ([1.05, 1.06, 1.04, 1.055], [1.0, 1.01, 0.99, 1.0], None),
    ([1.012, 1.01, 1.008, 1.011], [1.0, 1.002, 0.998, 1.001], None),
    ([0.9, 0.95, 0.85, 1.0], [1.0, 1.01, 0.99, 1.0], None),
    ([1.0, 1.001, 0.999, 1.0005], [1.0, 1.0005, 0.9995, 1.0], None),
])
def test_a_time_and_its_reciprocal_rate_get_the_same_verdict(times, base_times, threshold):
    """One workpackage's elapsed and mflops (work / elapsed): the rate's ratio is the time's reciprocal,
    and the band is symmetric in log, so both are judged alike."""
    elapsed, rate = metric(times), metric([1e3 / t for t in times], "mflops", "MFLOP/s", "higher")
    base_elapsed, base_rate = metric(base_times), metric([1e3 / t for t in base_times], "mflops", "MFLOP/s", "higher")
    by_time = judge(elapsed, base_elapsed.mean, base_elapsed.sd, base_elapsed.n, threshold)
    by_rate = judge(rate, base_rate.mean, base_rate.sd, base_rate.n, threshold)
    assert by_time.verdict == by_rate.verdict, (by_time.why, by_rate.why)


def test_a_time_and_its_rate_are_never_judged_opposite_ways():
    """Random workpackages (seeded): a time and its rate never get contradicting decisions."""
    rng = np.random.default_rng(34)
    contradictions = {("regressed", "improved"), ("improved", "regressed"), ("regressed", "within noise"),
                      ("within noise", "regressed"), ("improved", "within noise"), ("within noise", "improved")}
    for _ in range(300):
        n_base, n_now = rng.integers(2, 10, 2)
        base = 1 + 0.01 * rng.standard_normal(n_base)
        now = math.exp(rng.normal(0, 0.04)) * (1 + 0.01 * rng.standard_normal(n_now))
        verdicts = []
        for values, past in ((now, base), (1e3 / now, 1e3 / base)):
            way = "lower" if values is now else "higher"
            b = metric(past, way=way)
            verdicts.append(judge(metric(values, way=way), b.mean, b.sd, b.n, None).verdict)
        assert tuple(verdicts) not in contradictions, (now, base)


BENCHMARK = """name: it
outpath: runs
step:
  - name: work
    do: >-
      python3 -c "import os; v=[100.0, 103.0, 97.0][$jube_wp_iteration % 3]*float(os.environ.get('F', '1'));
      print(f'elapsed {v} s'); print(f'rate {1000/v} items/s')"
patternset:
  - name: p
    pattern:
      - {name: elapsed, type: float, unit: s, _: "elapsed $jube_pat_fp s"}
      - {name: rate, type: float, unit: items/s, _: "rate $jube_pat_fp items/s"}
analyser:
  - name: a
    use: p
    analyse: {step: work, file: stdout}
result:
  use: a
  table: {name: t, style: csv, column: [elapsed, rate]}
"""


@pytest.mark.slow
def test_bench_compare_prints_the_ratio_interval_and_the_repetitions_needed(tmp_path: Path, env):
    """3 repeats of 100, 103, 97 s, then 3 % slower: undecided, with the ratio's interval and the
    repetitions per side; `bench result` shows each figure's 99 % interval, its method and level."""
    (tmp_path / "it.yaml").write_text(BENCHMARK)
    assert bench("run", "it.yaml", "--repeat", "3", "-q", cwd=tmp_path, env=env).returncode == 0
    assert bench("run", "it.yaml", "--repeat", "3", "-q", cwd=tmp_path, env=dict(env, F="1.03")).returncode == 0
    shown = bench("compare", "-i", "last", "--baseline", "0", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "ratio [99 % interval]" in shown.stdout and "needed" in shown.stdout
    expected = judge(metric([103.0, 106.09, 99.91]), 100.0, 3.0, 3, None)
    row = next(line for line in shown.stdout.splitlines() if line.strip().startswith("elapsed"))
    assert f"{expected.ratio_low:.4g}, {expected.ratio_high:.4g}]" in row and row.split()[-1] == str(expected.needed)
    assert "cannot judge" in row and "2 metric(s) cannot be judged at this spread" in shown.stdout
    [time, rate] = json.loads(bench("compare", "-i", "last", "--baseline", "0", "--format", "json",
                                    cwd=tmp_path, env=env).stdout)
    assert time["ratio_ci"] == [pytest.approx(expected.ratio_low), pytest.approx(expected.ratio_high)]
    assert time["repetitions_needed"] == expected.needed and time["level"] == 0.99
    assert rate["verdict"] == time["verdict"] == "cannot judge"
    low, high = stats.t.interval(0.99, 2, loc=103.0, scale=stats.sem([103.0, 106.09, 99.91]))
    assert time["current_ci"] == [pytest.approx(low), pytest.approx(high)]

    table = bench("result", "-i", "last", cwd=tmp_path, env=env)
    assert table.stdout.startswith("elapsed[s],elapsed_sd[s],elapsed_ci_low[s],elapsed_ci_high[s],rate")
    assert "ci: 99 % t interval of the mean" in table.stderr
    cells = table.stdout.splitlines()[1].split(",")
    assert [float(c) for c in cells[2:4]] == [pytest.approx(low), pytest.approx(high)]
    as_json = json.loads(bench("result", "-i", "last", "--format", "json", cwd=tmp_path, env=env).stdout)
    [row_json] = as_json["rows"]
    assert row_json["elapsed_ci_low[s]"] == pytest.approx(low) and "99 % t interval" in as_json["caption"]


@pytest.mark.slow
def test_bench_compare_of_single_samples_cannot_judge_without_a_threshold(tmp_path: Path, env):
    """n = 1 on both sides: "cannot judge", exit 0 (it said "regressed", exit 1); judged against an
    explicit --threshold; the dashboard's summary gives the same verdict for the same pair."""
    (tmp_path / "it.yaml").write_text(BENCHMARK)
    assert bench("run", "it.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    assert bench("run", "it.yaml", "-q", cwd=tmp_path, env=dict(env, F="1.06")).returncode == 0
    plain = bench("compare", "-i", "last", "--baseline", "0", "--format", "json", cwd=tmp_path, env=env)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert {v["verdict"] for v in json.loads(plain.stdout)} == {"cannot judge"}
    table = bench("compare", "-i", "last", "--baseline", "0", cwd=tmp_path, env=env)
    assert "2 metric(s) of a single sample on a side" in table.stdout and "regressed" not in table.stdout
    judged_at_5 = bench("compare", "-i", "last", "--baseline", "0", "--threshold", "5", "--format", "json",
                        cwd=tmp_path, env=env)
    assert judged_at_5.returncode == 1
    assert {v["verdict"] for v in json.loads(judged_at_5.stdout)} == {"regressed"}  # time +6 %, rate -5.7 %

    from caramel.consumers.pages import summary
    from caramel.consumers.pages.sources import load

    rows = summary.rows(load([env["CARAMEL_HISTORY"]]))
    assert sorted(r.metric for r in rows) == ["elapsed [s]", "rate [items/s]"]
    assert {r.verdict for r in rows} == {"cannot judge"} and all(r.regressed == 0 for r in rows)


_SIDE = st.tuples(
    st.sampled_from([0.0, -3.0, 1e-9, 1.0, 99.5, 100.0, 101.0, 1e12, math.nan, math.inf]),
    st.sampled_from([0.0, 0.5, 3.0, 40.0, math.nan]),
    st.integers(0, 12),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_SIDE, _SIDE, st.sampled_from(["lower", "higher", "unknown"]))))
def test_pairs_judged_together_are_judged_as_one_at_a_time(pairs):
    """judge_pairs (the page's summary: every configuration's ratio interval in one call) gives
    each pair judge()'s whole verdict, whatever the sides (zeros, one sample, no spread, NaN)."""
    currents = [(Measured(m, s, n, way), b) for (m, s, n), b, way in pairs]
    together = judge_pairs([(c, *base) for c, base in currents])
    alone = [judge(c, *base, None, advise=False) for c, base in currents]
    # numpy's vectorised loops may round the last bit otherwise than its scalar ones: the bounds
    # agree to 1e-12, the words and reasons exactly (their figures shown to 4 digits)
    words = [(v.verdict, v.why, v.diff_pct, v.threshold, v.needed) for v in together]
    assert words == [(v.verdict, v.why, v.diff_pct, v.threshold, v.needed) for v in alone]
    for one, other in zip(together, alone, strict=True):
        for name in ("ratio", "ratio_low", "ratio_high"):
            a, b = getattr(one, name), getattr(other, name)
            assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12), name
