"""From a benchmark and the history to predictions: what `bench predict` and `bench plan --predict`
do.

forecast = make_forecast(bench, history_path, metrics=None, learn_from=None)
forecast.predictions                     # one per workpackage and metric, best model first
"""

from __future__ import annotations

import math
import shlex
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from caramel.consumers.predict.points import (
    MetricData,
    PredictError,
    Prediction,
    Target,
    load_points,
    targets_of,
)
from caramel.consumers.predict.select import Choice, Model, choose, is_time
from caramel.errors import did_you_mean

if TYPE_CHECKING:
    from caramel.consumers.predict.bykernels import KernelForecast
    from caramel.stages.spec.model import Benchmark


@dataclass
class Forecast:
    benchmark: str
    system: str
    learned_from: str | None = None  # another system, scaled by peak rates
    ratio: float = 1.0  # target peak / source peak
    choices: list[Choice] = field(default_factory=list)
    predictions: list[Prediction] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)  # what could not be predicted, and why
    targets: dict[str, list[Target]] = field(default_factory=dict)
    method: str = (
        "history"  # or "kernels": the system's kernel models over the profile (predict.bykernels)
    )
    kernels: KernelForecast | None = None  # with --method kernels
    why: str = ""  # why this method (auto)


def scale(data: MetricData, ratio: float) -> float:
    """A figure measured on another system, carried over by the ratio of peak rates: times shrink
    with a faster system, throughputs grow; other figures (energy, counts) are left as measured."""
    if _is_duration(data):
        return 1.0 / ratio
    if _is_rate(data):
        return ratio
    return 1.0


_TIME_UNITS = ("s", "ms", "min", "h")
_TIME_WORDS = ("time", "elapsed", "(s)", "duration", "runtime")  # a time's name without its unit
_RATE_WORDS = ("/s", "per second", "persec", "tflops", "flops")


def _is_duration(data: MetricData) -> bool:
    """Whether the metric is a time: lower is better, and its unit or name says time."""
    name = data.name.lower()
    by_unit = data.unit.strip().lower() in _TIME_UNITS
    return is_time(data) and (by_unit or any(w in name for w in _TIME_WORDS))


def _is_rate(data: MetricData) -> bool:
    """Whether the metric is a rate: higher is better, and its name says per second or FLOPS."""
    name = data.name.lower()
    return not is_time(data) and any(w in name for w in _RATE_WORDS)


def pick_metrics(data: list[MetricData], wanted: list[str] | None) -> list[MetricData]:
    if not wanted:
        return data
    names = [d.name for d in data]
    for name in wanted:
        if name not in names:
            raise _no_metric(name, names)
    return [d for d in data if d.name in wanted]


def _no_metric(name: str, names: list[str]) -> PredictError:
    hint = did_you_mean(name, names) or "metrics in the history: " + ", ".join(sorted(set(names)))
    return PredictError(f"no metric '{name}' in the history of this benchmark", hint=hint)


def predict(
    choice: Choice, targets: list[Target], factor: float = 1.0
) -> tuple[list[Prediction], list[str]]:
    """Each target by the best model of `choice` that can say something about it."""
    out, declined = [], []
    found = {id(model): model.predict(targets) for model in choice.models}
    for i, target in enumerate(targets):
        order = _models_for(choice, target)
        best = next(((m, p) for m in order if (p := found[id(m)][i]) is not None), None)
        if best is None:
            declined.append(
                f"workpackage {target.id}, {choice.data.name}: {_why_not(choice, target)}"
            )
        else:
            out.append(_prediction(choice, target, best, factor))
    return out, declined


def _models_for(choice: Choice, target: Target) -> list[Model]:
    """The models best first for this target: in the outward order where it lies outside the
    measured range."""
    return choice.outward if choice.outward and _outside(choice, target) else choice.models


def _why_not(choice: Choice, target: Target) -> str:
    """Why no model predicts the target: a value the models never saw, or no model at all."""
    if not choice.models or not hasattr(choice.models[0], "encoder"):
        return "no model could be fitted"
    return choice.models[0].encoder.declines(target.config) or "no model can predict it"


def _prediction(
    choice: Choice, target: Target, best: tuple[Model, tuple[float, float]], factor: float
) -> Prediction:
    """The prediction of `best` (a model and its log value and interval half width), times
    `factor`, with what of the target lies outside the measured range."""
    model, (log_value, half) = best
    outside = sorted(
        set(_outside(choice, target) + (model.outside(target) if hasattr(model, "outside") else []))
    )
    known = math.isfinite(half)
    return Prediction(
        target.id,
        target.config,
        choice.data.name,
        choice.data.unit,
        math.exp(log_value) * factor,
        math.exp(log_value - half) * factor if known else None,
        math.exp(log_value + half) * factor if known else None,
        len(choice.data.points),
        bool(outside),
        model.name,
        outside,
    )


def _outside(choice: Choice, target: Target) -> list[str]:
    from caramel.consumers.predict.features import Encoder

    return Encoder.fit([p.config for p in choice.data.points]).outside(target.config)


METHODS = ("auto", "history", "kernels")


def make_forecast(
    bench: Benchmark,
    history: str,
    metrics: list[str] | None = None,
    learn_from: str | None = None,
    systems: list[str] | None = None,
    validate: bool = True,
    method: str = "history",
) -> Forecast:
    """`method`: history (the benchmark's own runs), kernels (the system's microbenchmarks over the
    declared profile) or auto (history where the system has runs of the benchmark or --from is
    given, kernels where it has none but has microbenchmarks; with both, the one that validates
    better)."""
    system = bench.system.name if bench.system is not None else ""
    if method == "kernels":
        return kernel_method(bench, history, system)
    if method == "auto" and not learn_from:
        return auto_method(bench, history, metrics, systems, validate, system)
    return history_method(bench, history, metrics, learn_from, systems, validate, system)


def kernel_method(bench: Benchmark, history: str, system: str, why: str = "") -> Forecast:
    from caramel.consumers.predict.bykernels import kernel_forecast
    from caramel.stages.expand.plan import make_plan

    targets = targets_of(bench, make_plan(bench, run_id=0))
    found = kernel_forecast(bench, history, system, targets)
    forecast = Forecast(
        bench.name, system, targets=targets, method="kernels", kernels=found, why=why
    )
    forecast.predictions = sorted(found.predictions, key=lambda p: p.id)
    return forecast


def auto_method(
    bench: Benchmark,
    history: str,
    metrics: list[str] | None,
    systems: list[str] | None,
    validate: bool,
    system: str,
) -> Forecast:
    """History where it validates better or no microbenchmarks exist; kernels where the system never
    ran it."""
    try:
        by_history = history_method(bench, history, metrics, None, systems, validate, system)
    except PredictError as missing:
        return _kernels_without_runs(bench, history, system, missing)
    try:
        by_kernels = kernel_method(bench, history, system)
    except PredictError:
        return by_history
    return _better_validated(by_history, by_kernels)


def _kernels_without_runs(
    bench: Benchmark, history: str, system: str, missing: PredictError
) -> Forecast:
    """The kernel method where the system never ran the benchmark; else `missing` (the history
    method's error), its hint naming the microbenchmark suite."""
    try:
        return kernel_method(bench, history, system, why="the system has no runs of this benchmark")
    except PredictError:
        missing.hint += (
            f"; or run the microbenchmark suite on {system or 'the system'} (bench run "
            f"microbench --tag {system or 'SYSTEM'}) and predict from it: --method kernels"
        )
        raise missing from None


def _better_validated(by_history: Forecast, by_kernels: Forecast) -> Forecast:
    """The kernel forecast where its end-to-end errors (3 at least) score better than the
    history's best model of its metric; else the history's."""
    assert by_kernels.kernels is not None  # kernel_method's forecast carries its kernel models
    errors = by_kernels.kernels.end_to_end
    best = _history_score(by_history, by_kernels.kernels.metric)
    if errors and len(errors) >= 3:
        score = (statistics.median(errors) + float(np.percentile(errors, 90))) / 2
        if score < best:
            by_kernels.why = f"validates better ({score:.3g} % against the history's {best:.3g} %)"
            return by_kernels
    by_history.why = "the system has runs of this benchmark" + (
        " and the history's models validate better" if errors else ""
    )
    return by_history


def _history_score(forecast: Forecast, metric: str) -> float:
    """The best validation score of the history's models of `metric` (inf: none validated)."""
    choice = next((c for c in forecast.choices if c.data.name == metric), None)
    return min((v.score for v in choice.validations), default=math.inf) if choice else math.inf


def history_method(
    bench: Benchmark,
    history: str,
    metrics: list[str] | None,
    learn_from: str | None,
    systems: list[str] | None,
    validate: bool,
    system: str,
) -> Forecast:
    from caramel.stages.expand.plan import make_plan

    source = learn_from if learn_from not in (None, system) else None
    ratio = peak_ratio(system, source, systems) if source else 1.0
    data = pick_metrics(
        load_points(history, bench.name, system, source, record_command(bench)), metrics
    )
    forecast = Forecast(
        bench.name, system, source, ratio, targets=targets_of(bench, make_plan(bench, run_id=0))
    )
    for metric in data:
        choice = choose(metric, validate)
        forecast.choices.append(choice)
        found, declined = predict(
            choice, forecast.targets.get(metric.table, []), scale(metric, ratio)
        )
        forecast.predictions += found
        forecast.declined += declined
    forecast.predictions.sort(key=lambda p: p.id)
    return forecast


def record_command(bench: Benchmark) -> str:
    """`bench run FILE --tag ...`: how to record what the history lacks for this benchmark."""
    tags = " ".join(sorted(bench.tags))
    from caramel.consumers.catalog import name_for

    named = shlex.quote(name_for(bench.file)) if bench.file else "FILE"
    return f"bench run {named}" + (f" --tag {tags}" if tags else "")


def validate(data: list[MetricData]) -> list[Choice]:
    return [choose(metric) for metric in data]


def peak_ratio(target: str, source: str, systems: list[str] | None) -> float:
    """Peak rate per device of `target` over that of `source`, from their system files."""
    from caramel.adapters.systems import find_system

    peaks = []
    for name in (target, source):
        found = find_system({name}, systems) if name else None
        if found is None:
            raise PredictError(
                f"no system file for '{name or '(none)'}': learning across systems needs both "
                "systems' peak rates",
                hint="name a system with its tag (systems/NAME.yaml)",
            )
        if not found.peak_tflops:
            raise PredictError(
                f"system '{name}' has no peak_tflops",
                found.where,
                hint="add `peak_tflops: N` (per device, the precision the benchmark uses)",
            )
        peaks.append(found.peak_tflops)
    return peaks[0] / peaks[1]
