"""The methodology table (issue 21): only a benchmark's result is judged (a copies table's declared
aggregate, never a copy nor the sd/sem rows), bounds per system, n = 1 cannot judge spread, an
unknown direction cannot be judged, unknown entries are errors with did-you-mean."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from caramel.consumers.history.methodology import Verdict, judge
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.targets import read_targets
from caramel.errors import RunError
from caramel.stages.spec.estimator import parse_estimator


def copies_metrics(name: str = "users") -> list[tuple[str, Metric]]:
    """A performance table of 2 copies, 3 runs: each copy's figure, the sum, and the sd/sem rows."""
    def metric(copy: str, samples: list[float]) -> tuple[str, Metric]:
        row = {"model": name, "caramel_copy": copy, "metric": "img/s"}
        return name, Metric("performance", row, "performance", "", "higher", samples)

    return [metric("0", [10, 10.2, 9.9]), metric("1", [11, 11.1, 10.8]), metric("sum", [21, 21.3, 20.7]),
            metric("sd", [0.7, 0.6, 0.65]), metric("sem", [0.5, 0.4, 0.45])]


def targets(tmp_path: Path, text: str):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return read_targets(str(path))


def test_only_the_aggregate_is_judged(tmp_path: Path) -> None:
    result = judge(copies_metrics(), targets(tmp_path, "systems:\n  local:\n    users: {value: 20, upper: +10%}\n"),
                   system_names=["local"])
    [line] = result.lines
    assert line.result == pytest.approx(21.0) and line.n == 3 and line.verdict is Verdict.PASS
    assert line.low == pytest.approx(19.0) and line.high == pytest.approx(22.0)
    assert line.sem_pct == pytest.approx(100 * line.sd / math.sqrt(3) / 21.0)
    assert result.passed


def test_asymmetric_bounds_and_sd_targets(tmp_path: Path) -> None:
    above = judge(copies_metrics(), targets(tmp_path, "systems:\n  local:\n    users: [20, -0.05, 0.02]\n"),
                  system_names=["local"])
    assert above.lines[0].verdict is Verdict.FAIL and "outside [19, 20.4]" in above.lines[0].why
    spread = judge(copies_metrics(), targets(tmp_path, "systems:\n  local:\n    users: {value: 21, max_sd: 0.5%}\n"),
                   system_names=["local"])
    assert spread.lines[0].verdict is Verdict.FAIL and "above max_sd 0.5%" in spread.lines[0].why


def test_one_sample_cannot_judge_spread(tmp_path: Path) -> None:
    one = [("b", Metric("t", {}, "rate", "", "higher", [100.0]))]
    result = judge(one, {"b": 90})
    [line] = result.lines
    assert line.verdict is Verdict.PASS and math.isnan(line.sd) and math.isnan(line.sd_pct)
    name, value, ok = result.criteria[1]
    assert name == "deviation quantile (80%)" and math.isnan(value) and ok is None
    assert not result.passed  # the sd criterion cannot pass on sd 0s
    asked = judge(one, targets(tmp_path, "systems:\n  local:\n    b: {value: 90, max_sd: 5%}\n"), system_names=["local"])
    assert asked.lines[0].verdict is Verdict.CANNOT_JUDGE


def test_unknown_direction_cannot_be_judged() -> None:
    unknown = [("b", Metric("t", {}, "score", "", "unknown", [1.0, 1.1]))]
    [line] = judge(unknown, {"b": 1}).lines
    assert line.verdict is Verdict.CANNOT_JUDGE and "direction" in line.why


def test_lower_is_better_turns_the_diff_and_bounds() -> None:
    latency = [("b", Metric("t", {}, "latency", "ms", "lower", [120.0, 121.0]))]
    [line] = judge(latency, {"b": 100}).lines
    assert line.verdict is Verdict.FAIL and line.diff_pct == pytest.approx(-20.5) and line.high == pytest.approx(105)


def test_a_benchmark_without_reference_for_the_system_is_reported(tmp_path: Path) -> None:
    figures = copies_metrics() + [("other", Metric("t", {}, "rate", "", "higher", [5.0, 5.1]))]
    result = judge(figures, targets(tmp_path, "systems:\n  local:\n    users: 21\n  JEDI:\n    other: 5\n"),
                   system_names=["local"])
    assert [(x.name, x.verdict) for x in result.lines] == [("users", Verdict.PASS), ("other", Verdict.NO_REFERENCE)]
    assert result.lines[1].why == "no reference for system local" and not result.passed


def test_the_milabench_estimator_is_used_when_chosen(tmp_path: Path) -> None:
    samples = [10.0, 10.1, 9.9, 10.05, 30.0]  # one outlier, dropped with the max
    figures = [("b", Metric("t", {}, "rate", "", "higher", samples))]
    trimmed = judge(figures, {"b": 10}, estimators={"b": parse_estimator("milabench")})
    assert trimmed.lines[0].result == pytest.approx(10.05)  # 10.0, 10.05, 10.1 and trimmed.lines[0].passed
    assert trimmed.captions == ["estimator: mean without the min and max sample (from 5 samples on), sd ddof=0"]
    assert judge(figures, {"b": 10}).lines[0].result == pytest.approx(14.01)


@pytest.mark.parametrize(("text", "says"), [
    ("systems:\n  locl:\n    users: 1\n", "unknown system 'locl'"),
    ("systems:\n  local:\n    user: 1\n", "unknown benchmark 'user'"),
    ("systems:\n  local:\n    users:\n      img/sec: 1\n", "unknown figure 'img/sec' of 'users'"),
])
def test_unknown_entries_are_errors_with_did_you_mean(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(RunError) as caught:
        judge(copies_metrics(), targets(tmp_path, text), system_names=["local"])
    assert says in str(caught.value) and "did you mean" in str(caught.value)


def test_a_benchmark_without_figures_is_still_reported(tmp_path: Path) -> None:
    result = judge(copies_metrics(), targets(tmp_path, "systems:\n  local:\n    users: 21\n    broken: 3\n"),
                   system_names=["local"], benchmarks=["users", "broken", "hang"])
    assert [(x.name, x.verdict) for x in result.lines] == [
        ("users", Verdict.PASS), ("broken", Verdict.NO_FIGURE), ("hang", Verdict.NO_REFERENCE)]


def test_each_result_shows_its_interval_beside_it() -> None:
    """Issue 34: a result of n >= 2 samples carries its 99 % interval (Student's t of the mean, as
    scipy.stats.t.interval gives it; the bootstrap for a trimmed mean), in the table and the JSON
    with its method and level; one sample has none. The verdict stays the result against its bounds:
    an interval reaching below the lower bound does not fail a result within them."""
    import json

    import scipy.stats

    from caramel.cli.methodology import _json, _print

    samples = [100.0, 96.0, 104.0, 99.0]
    figures = [("b", Metric("t", {}, "rate", "", "higher", samples)),
               ("one", Metric("t", {}, "rate", "", "higher", [50.0]))]
    result = judge(figures, {"b": 100, "one": 50})
    line, single = result.lines
    low, high = scipy.stats.t.interval(0.99, 3, loc=99.75, scale=scipy.stats.sem(samples))
    assert (line.ci_low, line.ci_high) == pytest.approx((low, high), rel=1e-12)
    assert line.ci_method == "t interval of the mean" and line.level == 0.99
    assert low < line.low and line.verdict is Verdict.PASS  # 95 lies inside the interval
    assert math.isnan(single.ci_low) and single.ci_method is None
    assert result.intervals == ["99 % t interval of the mean"]
    shown = json.loads(_json(result))
    assert shown["intervals"] == ["99 % t interval of the mean"]
    assert shown["benchmarks"][0]["ci_low"] == pytest.approx(low)
    assert shown["benchmarks"][1]["ci_low"] is None
    out = io.StringIO()
    _print(result, False, out)
    text = out.getvalue()
    assert "99 % CI" in text and f"[{low:.6g}, {high:.6g}]" in text
    assert "CI: 99 % t interval of the mean" in text
    five = [("b", Metric("t", {}, "rate", "", "higher", [*samples, 130.0]))]  # trimmed from 5 on
    trimmed = judge(five, {"b": 100}, estimators={"b": parse_estimator("trimmed")})
    assert trimmed.lines[0].ci_method == "BCa bootstrap over the samples (trimmed mean)"
