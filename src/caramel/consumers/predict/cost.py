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

from caramel.consumers.predict.declaration import declaration
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


def job_costs(forecast: Forecast) -> list[JobCost]:
    by_id: dict[int, dict[str, Prediction]] = {}
    for p in forecast.predictions:
        by_id.setdefault(p.id, {})[p.metric] = p
    params = {t.id: t.params or {} for targets in forecast.targets.values() for t in targets}
    fallback = _time_metric(forecast)
    energy = next(
        (
            c.data.name
            for c in forecast.choices
            if "energy" in c.data.name.lower() and "/" not in c.data.name
        ),
        "",
    )
    out = []
    for wp_id, found in sorted(by_id.items()):
        decl = declaration(params.get(wp_id))
        metric = decl.metric if decl is not None and decl.metric in found else fallback
        if metric not in found:
            continue
        value, low, high = _bounds(found[metric])
        units = (
            decl.job_units if decl is not None and decl.metric == metric and decl.job_units else 1.0
        )
        if found[metric].unit.strip().lower() != "s" and _is_rate(forecast, metric):
            seconds = (units / value, units / high, units / low)
        else:
            seconds = (units * value, units * low, units * high)
        uncapped = seconds
        capped = decl is not None and decl.job_limit is not None and seconds[2] > decl.job_limit
        if decl is not None and decl.job_limit is not None:
            limit = decl.job_limit
            seconds = (min(seconds[0], limit), min(seconds[1], limit), min(seconds[2], limit))
        try:
            nodes = int(str(params.get(wp_id, {}).get("nodes", 1)))
        except ValueError:
            nodes = 1
        cost = JobCost(
            wp_id,
            nodes,
            seconds,
            capped,
            _bounds(found[energy]) if energy in found else None,
            found[metric].model,
            found[metric].extrapolated,
            uncapped,
        )
        out.append(cost)
    return out


def _is_rate(forecast: Forecast, metric: str) -> bool:
    return any(c.data.name == metric and c.data.direction == "higher" for c in forecast.choices)


def total(costs: list[JobCost], part: str) -> tuple[float, float, float] | None:
    values = [getattr(c, part) for c in costs if getattr(c, part) is not None]
    if not values:
        return None
    return (sum(v[0] for v in values), sum(v[1] for v in values), sum(v[2] for v in values))
