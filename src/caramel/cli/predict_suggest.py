"""`bench predict --suggest N`: the configurations of the plan that would most reduce the
uncertainty of the first timed metric."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, TextIO

from caramel.cli.predict_text import configuration_text, print_rows

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.cli.predict import PredictOptions
    from caramel.consumers.predict.points import MetricData, Target
    from caramel.stages.spec.model import Benchmark


def print_suggestions(bench: Benchmark, options: PredictOptions, out: TextIO) -> None:
    """`bench predict --suggest N`: the configurations of the plan that would most reduce the
    uncertainty of the first timed metric (else the first metric)."""
    from caramel.consumers.predict.points import targets_of
    from caramel.consumers.predict.suggest import suggest
    from caramel.stages.expand.plan import make_plan

    system = _system_name(bench)
    targets = targets_of(bench, make_plan(bench, run_id=0))
    metric = _first_timed(_measured(bench, system, options))
    table = metric.table if metric else next(iter(targets), "")
    candidates = targets.get(table, [])
    points = metric.points if metric else []
    chosen = suggest(points, candidates, candidates, options.suggest or 0)
    write = _write_suggestions_json if options.json else _write_suggestions_text
    write(bench.name, system, metric, chosen, out)


def _system_name(bench: Benchmark) -> str:
    return bench.system.name if bench.system is not None else ""


def _measured(bench: Benchmark, system: str, options: PredictOptions) -> list[MetricData]:
    """The history's metrics of the benchmark (those of --metric); none, with a note, when it
    holds none and no --metric asked for one."""
    from caramel.consumers.predict.points import PredictError, load_points
    from caramel.consumers.predict.service import pick_metrics, record_command

    forecast = options.forecast
    try:
        found = load_points(
            forecast.history_path(), bench.name, system, forecast.learn_from, record_command(bench)
        )
        return pick_metrics(found, list(options.metrics))
    except PredictError as exc:
        if options.metrics:
            raise
        print(f"note: {exc.message}: any configuration teaches something", file=sys.stderr)
        return []


def _first_timed(data: list[MetricData]) -> MetricData | None:
    """The metric suggestions serve: the first time (lower is better), else the first metric."""
    timed = [d for d in data if _is_time(d)]
    return next(iter(timed or data), None)


def _is_time(data: MetricData) -> bool:
    from caramel.stages.spec.units import is_time_unit

    named_time = "time" in data.name.lower() or is_time_unit(data.unit)
    return data.direction == "lower" and named_time


def _write_suggestions_json(
    benchmark: str,
    system: str,
    metric: MetricData | None,
    chosen: list[tuple[Target, str]],
    out: TextIO,
) -> None:
    doc = {
        "benchmark": benchmark,
        "system": system,
        "metric": metric.name if metric else None,
        "suggestions": [{"id": t.id, "parameters": t.config, "why": why} for t, why in chosen],
    }
    print(json.dumps(doc, indent=1), file=out)


def _write_suggestions_text(
    benchmark: str,
    system: str,
    metric: MetricData | None,
    chosen: list[tuple[Target, str]],
    out: TextIO,
) -> None:
    aim = f", for {metric.name}" if metric else ""
    print(f"measure next ({benchmark} on {system or '(no system)'}{aim}):", file=out)
    rows = [["id", "parameters", "why"]] + [
        [str(t.id), configuration_text(t.config), why] for t, why in chosen
    ]
    print_rows(rows, out)
    if not chosen:
        print(
            "  nothing: every configuration of the plan was measured "
            "(other tags give other candidates)",
            file=out,
        )
