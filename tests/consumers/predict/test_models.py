"""The models on histories of known laws: each recovers what it can, declines what it cannot."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from caramel.consumers.predict.analytic import Analytic
from caramel.consumers.predict.features import Encoder
from caramel.consumers.predict.gp import GaussianProcess
from caramel.consumers.predict.points import MetricData, Point, Target
from caramel.consumers.predict.powerlaw import PowerLaw
from caramel.consumers.predict.select import choose
from caramel.consumers.predict.service import predict


def law(a: float, b: float, c: float) -> float:
    return 0.03 * a ** 0.7 * b ** 0.5 / c ** 0.5


def grid(noise: float = 0.03, seed: int = 1) -> list[Point]:
    rng = np.random.default_rng(seed)
    return [Point({"a": str(a), "b": str(b), "c": str(c)}, samples=list(law(a, b, c) * rng.normal(1, noise, 3)))
            for a, b, c in itertools.product([1, 2, 4], [1, 4], [1, 4])]


@pytest.mark.parametrize("model", [PowerLaw(False), PowerLaw(True), GaussianProcess()], ids=lambda m: m.name)
def test_data_driven_models_recover_the_law_inside_the_range(model) -> None:
    assert model.fit(grid())
    targets = [Target({"a": "3", "b": str(b), "c": str(c)}) for b in (2, 3) for c in (2, 3)]
    for target, found in zip(targets, model.predict(targets), strict=True):
        truth = law(3, float(target.config["b"]), float(target.config["c"]))
        assert abs(math.exp(found[0]) / truth - 1) < 0.10
        assert found[1] > 0  # an interval, from the noise


def test_the_interval_holds_about_90_percent_of_new_measurements() -> None:
    model = PowerLaw(False)
    assert model.fit(grid(noise=0.05))
    rng = np.random.default_rng(7)
    inside = 0
    for _ in range(200):
        a, b, c = rng.uniform(1, 4), rng.uniform(1, 4), rng.uniform(1, 4)
        log_value, half = model.predict([Target({"a": str(a), "b": str(b), "c": str(c)})])[0]
        measured = math.log(law(a, b, c) * rng.normal(1, 0.05))
        inside += abs(measured - log_value) <= half
    assert 0.8 <= inside / 200 <= 0.99


def test_a_category_that_varies_is_used_not_dropped() -> None:
    points = [Point({"n": str(n), "kind": kind}, samples=[0.01 * n * (3 if kind == "slow" else 1)] * 2)
              for n in (1, 2, 4, 8) for kind in ("fast", "slow")]
    model = PowerLaw(False)
    assert model.fit(points)
    slow, fast = model.predict([Target({"n": "3", "kind": "slow"}), Target({"n": "3", "kind": "fast"})])
    assert math.exp(slow[0] - fast[0]) == pytest.approx(3, rel=0.05)
    assert model.predict([Target({"n": "3", "kind": "other"})]) == [None]  # never measured: declines


def test_extrapolation_is_marked_per_parameter() -> None:
    encoder = Encoder.fit([p.config for p in grid()])
    assert encoder.outside({"a": "3", "b": "2", "c": "2"}) == []
    assert encoder.outside({"a": "8", "b": "2", "c": "2"}) == ["a"]
    assert encoder.declines({"a": "1", "b": "1", "c": "1", "d": "x"}) == ""


def test_analytic_model_learns_the_rate_and_its_dependence_on_devices() -> None:
    def params(work: float, devices: int) -> dict:
        return {"predict_work": work, "predict_work_metric": "t", "predict_devices": devices}

    # sustained rate 2e9 per device on one device, falling as devices^-0.1 (communication)
    points = [Point({"w": str(w), "d": str(d)}, params(w, d), samples=[w / (d * 2e9 * d ** -0.1)] * 2)
              for w in (1e9, 4e9, 16e9) for d in (1, 2, 4)]
    model = Analytic("t", is_time=True)
    assert model.fit(points)
    found = model.predict([Target({}, params(1e12, 8))])[0]
    assert math.exp(found[0]) == pytest.approx(1e12 / (8 * 2e9 * 8 ** -0.1), rel=0.01)
    assert model.outside(Target({}, params(1e12, 8))) == ["work", "devices"]
    assert model.predict([Target({}, {"predict_work": 1e9, "predict_work_metric": "other"})]) == [None]


@pytest.mark.slow
def test_leave_one_out_picks_the_model_that_validates_best() -> None:
    data = MetricData("t", "elapsed", "s", "lower", grid())
    choice = choose(data)
    assert choice.validated and choice.chosen in {"powerlaw", "gaussian-process", "powerlaw×products"}
    by_name = {v.model: v for v in choice.validations}
    assert by_name[choice.chosen].score == min(v.score for v in choice.validations)
    assert by_name["powerlaw"].median < 5
    assert "analytic" not in by_name  # nothing declared: not a candidate


def test_too_thin_a_history_is_unvalidated_and_still_predicts() -> None:
    data = MetricData("t", "elapsed", "s", "lower", grid()[:2])
    choice = choose(data)
    assert not choice.validated
    found, declined = predict(choice, [Target({"a": "1", "b": "1", "c": "1"}, id=0)])
    assert len(found) == 1 and not declined


def _overhead_points(hidden: list[int], noise: float = 0.02) -> list[Point]:
    """Time = 50 ms + work / 2e10: overhead-dominated for small models, work-dominated for large."""
    rng = np.random.default_rng(3)
    out = []
    for h, layers in itertools.product(hidden, [1, 2, 4]):
        work = 6.0 * 12 * layers * h * h * 256
        params = {"predict_work": work, "predict_work_metric": "t", "predict_devices": 1}
        out.append(Point({"h": str(h), "L": str(layers)}, params,
                         samples=list((0.05 + work / 2e10) * rng.normal(1, noise, 3))))
    return out


def test_analytic_overhead_carries_the_work_beyond_the_measured_range() -> None:
    from caramel.consumers.predict.overhead import AnalyticOverhead

    model = AnalyticOverhead("t", is_time=True)
    assert model.fit(_overhead_points([32, 48, 64, 96]))
    target = _overhead_points([384], noise=0)[2]  # four times the largest hidden size, 4 layers
    log_value, half = model.predict([target])[0]
    assert math.exp(log_value) == pytest.approx(target.samples[0], rel=0.10)
    power = PowerLaw(False)
    assert power.fit(_overhead_points([32, 48, 64, 96]))
    assert math.exp(power.predict([target])[0][0]) < 0.8 * target.samples[0]  # the power law falls short


@pytest.mark.slow
def test_outside_the_range_a_tied_analytic_model_goes_first() -> None:
    choice = choose(MetricData("t", "t", "s", "lower", _overhead_points([32, 48, 64, 96])))
    assert choice.validated
    assert choice.outward[0].name.startswith("analytic")
    found, _ = predict(choice, [_overhead_points([384], noise=0)[2]])
    assert found[0].model == choice.outward[0].name and found[0].extrapolated


def test_one_sample_predicts_without_an_interval() -> None:
    choice = choose(MetricData("t", "elapsed", "s", "lower", [Point({"a": "1"}, samples=[0.5])]))
    found, _ = predict(choice, [Target({"a": "1"}, id=3)])
    assert found[0].value == pytest.approx(0.5) and found[0].low is None and found[0].high is None
