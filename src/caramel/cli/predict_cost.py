"""`bench plan --predict`: the plan with each workpackage's predicted job (nodes, time,
node-hours) and the campaign's node-hours and energy, with their 90 % intervals."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, TextIO

from caramel.cli.predict_kernels import method_json, method_line
from caramel.cli.predict_text import finite_json, learned_line, print_rows

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.cli.predict import ForecastOptions
    from caramel.consumers.predict.cost import JobCost
    from caramel.consumers.predict.service import Forecast
    from caramel.stages.expand.plan import Plan
    from caramel.stages.spec.model import Benchmark

Span = tuple[float, float, float]  # a predicted value, its 90 % interval's low and high ends


def _span(v: Span, fmt: str = ".3g") -> str:
    if not (math.isfinite(v[1]) and math.isfinite(v[2])):
        return f"{v[0]:{fmt}} (no interval: one sample)"
    return f"{v[0]:{fmt}} (90 %: {v[1]:{fmt}} .. {v[2]:{fmt}})"


def print_cost(
    bench: Benchmark,
    plan: Plan,
    options: ForecastOptions,
    systems: list[str],
    as_json: bool,
    out: TextIO,
) -> None:
    """`bench plan --predict`: the plan with each workpackage's predicted job and the campaign's
    cost."""
    from caramel.cli.plan_output import plan_json, print_plan
    from caramel.consumers.predict.cost import job_costs, total
    from caramel.consumers.predict.service import make_forecast

    forecast = make_forecast(
        bench, options.history_path(), None, options.learn_from, systems, method=options.method
    )
    costs = job_costs(forecast)
    campaign = {
        "node_hours": total(costs, "node_hours"),
        "energy_wh": total(costs, "energy_wh"),
        "node_hours_without_limit": total(costs, "uncapped_node_hours"),
    }
    if as_json:
        doc = plan_json(plan)
        doc["cost"] = finite_json(_cost_json(forecast, costs, campaign))
        print(json.dumps(doc, indent=1), file=out)
        return
    print_plan(plan, out)
    _print_job_costs(forecast, costs, out)
    _print_campaign_cost(campaign, costs, out)


def _cost_json(
    forecast: Forecast, costs: list[JobCost], campaign: dict[str, Span | None]
) -> dict[str, object]:
    return {
        "system": forecast.system,
        "learned_from": forecast.learned_from,
        "peak_ratio": forecast.ratio,
        **campaign,
        **method_json(forecast),
        "jobs": [_job_json(c) for c in costs],
    }


def _job_json(c: JobCost) -> dict[str, object]:
    return {
        "id": c.id,
        "nodes": c.nodes,
        "seconds": c.seconds,
        "node_hours": c.node_hours,
        "seconds_without_limit": c.uncapped or c.seconds,
        "energy_wh": c.energy_wh,
        "capped": c.capped,
        "model": c.model,
        "extrapolated": c.extrapolated,
    }


def _print_job_costs(forecast: Forecast, costs: list[JobCost], out: TextIO) -> None:
    """How the jobs were predicted, then one row per job: nodes, time, node-hours, model."""
    print(
        f"predicted cost on {forecast.system or '(no system)'} (bench predict; docs/predict.md):",
        file=out,
    )
    if forecast.learned_from:
        print("  " + learned_line(forecast), file=out)
    print("  " + method_line(forecast), file=out)
    rows = [["id", "nodes", "job time (s)", "node-hours", "model", "note"]]
    print_rows(rows + [_cost_row(c) for c in costs], out)


def _cost_row(c: JobCost) -> list[str]:
    capped = "capped by predict_job_limit; " if c.capped else ""
    note = capped + ("extrapolated" if c.extrapolated else "")
    return [
        str(c.id),
        str(c.nodes),
        _span(c.seconds),
        _span(c.node_hours),
        c.model,
        note.strip("; "),
    ]


def _print_campaign_cost(
    campaign: dict[str, Span | None], costs: list[JobCost], out: TextIO
) -> None:
    """The campaign's node-hours (and without predict_job_limit, where it capped a job) and
    energy."""
    hours = campaign["node_hours"]
    print(
        f"campaign: {_span(hours)} node-hours"
        if hours
        else "campaign: no workpackage could be predicted",
        file=out,
    )
    uncapped = campaign["node_hours_without_limit"]
    if any(c.capped for c in costs) and uncapped is not None:
        print(
            f"  (jobs stop at predict_job_limit; run to their end: {_span(uncapped)} node-hours)",
            file=out,
        )
    print(_energy_line(campaign["energy_wh"]), file=out)


def _energy_line(energy: Span | None) -> str:
    if energy:
        return f"energy: {_span(energy)} Wh"
    return (
        "energy: not predicted (the history holds no energy figure for this benchmark and system)"
    )
