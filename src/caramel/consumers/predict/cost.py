"""What a campaign costs before it runs: each workpackage's predicted job time, the campaign's
node-hours (nodes × job time) and energy, each with its 90 % interval.

Job time: the declared work metric (caramel.consumers.predict.declaration) times the units of one
job (`predict_job_units`; a throughput divides them), capped at `predict_job_limit`; without a
declaration, the first time metric as it is. The campaign's interval adds the workpackages' lows
and highs: one model's errors move together, so they are not taken as independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from caramel.consumers.predict.declaration import Declaration, declaration
from caramel.consumers.predict.points import Prediction
from caramel.consumers.predict.service import Forecast
from caramel.stages.spec.units import is_time_unit


@dataclass
class JobCost:
    id: int
    nodes: int
    seconds: tuple[float, float, float]  # value, low, high
    capped: bool = False
    energy_wh: tuple[float, float, float] | None = None
    model: str = ""
    extrapolated: bool = False
    uncapped: tuple[float, float, float] | None = None  # the job time without predict_job_limit

    @property
    def node_hours(self) -> tuple[float, float, float]:
        return _hours(self.nodes, self.seconds)

    @property
    def uncapped_node_hours(self) -> tuple[float, float, float]:
        return _hours(self.nodes, self.uncapped or self.seconds)


def _hours(nodes: int, seconds: tuple[float, float, float]) -> tuple[float, float, float]:
    """Node-hours of a job's (value, low, high) seconds."""
    value, low, high = seconds
    return nodes * value / 3600, nodes * low / 3600, nodes * high / 3600


def _time_metric(forecast: Forecast) -> str:
    for choice in forecast.choices:
        name = choice.data.name.lower()
        # the stored direction and unit decide; the name only for a history whose units were not
        # kept
        if choice.data.direction == "lower" and (
            is_time_unit(choice.data.unit) or "time" in name or "elapsed" in name or "(s)" in name
        ):
            return choice.data.name
    return ""


def _bounds(p: Prediction) -> tuple[float, float, float]:
    low = p.low if p.low is not None else math.nan
    high = p.high if p.high is not None else math.nan
    return p.value, low, high


Seconds = tuple[float, float, float]  # value, low, high


@dataclass(frozen=True)
class _Metrics:
    """The forecast's metrics a job's cost is read from."""

    time: str  # the first time metric: the job time where no declaration names a metric
    energy: str  # the first energy metric ("" for none)
    rates: frozenset[str]  # the metrics where higher is better: a job's units divide by them

    @classmethod
    def of(cls, forecast: Forecast) -> _Metrics:
        return cls(
            _time_metric(forecast),
            _energy_metric(forecast),
            frozenset(c.data.name for c in forecast.choices if c.data.direction == "higher"),
        )


def _energy_metric(forecast: Forecast) -> str:
    """The first metric named for energy that is not a rate of it ("" for none)."""
    names = (c.data.name for c in forecast.choices)
    return next((n for n in names if "energy" in n.lower() and "/" not in n), "")


def job_costs(forecast: Forecast) -> list[JobCost]:
    """The cost of each workpackage with a predicted job time, by workpackage id."""
    by_id: dict[int, dict[str, Prediction]] = {}
    for p in forecast.predictions:
        by_id.setdefault(p.id, {})[p.metric] = p
    params = _parameters(forecast)
    metrics = _Metrics.of(forecast)
    costs = (_job_cost(metrics, i, found, params.get(i)) for i, found in sorted(by_id.items()))
    return [cost for cost in costs if cost is not None]


def _parameters(forecast: Forecast) -> dict[int, dict[str, object]]:
    """Each target workpackage's parameters, by id ({} where unknown)."""
    return {t.id: t.params or {} for targets in forecast.targets.values() for t in targets}


def _job_cost(
    metrics: _Metrics, wp_id: int, found: dict[str, Prediction], params: dict[str, object] | None
) -> JobCost | None:
    """The workpackage's cost from its predictions `found` (by metric) and its parameters; None
    without a prediction of its job time."""
    decl = declaration(params)
    metric = decl.metric if decl is not None and decl.metric in found else metrics.time
    if metric not in found:
        return None
    uncapped = _job_seconds(found[metric], decl, metric in metrics.rates)
    seconds, capped = _limited(uncapped, decl)
    energy = _bounds(found[metrics.energy]) if metrics.energy in found else None
    return JobCost(
        wp_id,
        _nodes(params or {}),
        seconds,
        capped,
        energy,
        found[metric].model,
        found[metric].extrapolated,
        uncapped,
    )


def _job_seconds(prediction: Prediction, decl: Declaration | None, is_rate: bool) -> Seconds:
    """The job time from the prediction of its metric: the units of one job times a time per unit,
    or divided by a rate."""
    value, low, high = _bounds(prediction)
    units = _job_units(decl, prediction.metric)
    if prediction.unit.strip().lower() != "s" and is_rate:
        return (units / value, units / high, units / low)
    return (units * value, units * low, units * high)


def _job_units(decl: Declaration | None, metric: str) -> float:
    """The units of one job the declaration gives for `metric`; else 1."""
    if decl is None or decl.metric != metric or not decl.job_units:
        return 1.0
    return decl.job_units


def _limited(seconds: Seconds, decl: Declaration | None) -> tuple[Seconds, bool]:
    """The job time capped at the declared job limit, and whether its high end was above it."""
    if decl is None or decl.job_limit is None:
        return seconds, False
    limit = decl.job_limit
    within = (min(seconds[0], limit), min(seconds[1], limit), min(seconds[2], limit))
    return within, seconds[2] > limit


def _nodes(params: dict[str, object]) -> int:
    """The workpackage's `nodes` parameter; 1 when it has none or it is no whole number."""
    try:
        return int(str(params.get("nodes", 1)))
    except ValueError:
        return 1


def total(costs: list[JobCost], part: str) -> tuple[float, float, float] | None:
    values = [getattr(c, part) for c in costs if getattr(c, part) is not None]
    if not values:
        return None
    return (sum(v[0] for v in values), sum(v[1] for v in values), sum(v[2] for v in values))
