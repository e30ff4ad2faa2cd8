"""`bench predict FILE --tag ...`: every workpackage's metrics predicted from the history, with
90 % intervals, before anything runs; `--validate` says how well each model predicts what was
measured, `--suggest N` what to measure next, `--from SYSTEM` learns from another system.
docs/predict.md describes the models."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO, TypedDict

from caramel.cli.common import BenchmarkOptions, add_benchmark_args, add_predict_args, load_named
from caramel.cli.tables import CELL_WIDTH, clip, plural

if (
    TYPE_CHECKING
):  # the models import numpy and scikit-learn: imported by the command, not by --help
    from caramel.consumers.predict.bykernels import KernelForecast
    from caramel.consumers.predict.cost import JobCost
    from caramel.consumers.predict.points import MetricData, Prediction, Target
    from caramel.consumers.predict.select import Choice
    from caramel.consumers.predict.service import Forecast
    from caramel.stages.expand.plan import Plan
    from caramel.stages.spec.model import Benchmark

COMMAND = "predict"  # `bench predict` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "predict", help="predict the metrics of a benchmark's workpackages from the history"
    )
    add_benchmark_args(parser)
    add_predict_args(parser)
    parser.add_argument(
        "--metric",
        "-m",
        nargs="+",
        action="extend",
        default=[],
        metavar="M",
        help="only these metrics (table column titles)",
    )
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.add_argument(
        "--validate",
        action="store_true",
        help="leave-one-out over the history: each model's median and 90th-percentile error",
    )
    parser.add_argument(
        "--suggest",
        type=int,
        metavar="N",
        help="the N configurations of the plan that would most reduce the uncertainty",
    )
    parser.set_defaults(func=run)


Method = Literal["auto", "history", "kernels"]


@dataclass(frozen=True)
class ForecastOptions:
    """What `add_predict_args` reads: where predictions learn from."""

    history: str | None = None  # None: $CARAMEL_HISTORY or the data folder
    learn_from: str | None = None  # another system's history, scaled by the peak rates
    method: Method = "auto"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ForecastOptions:
        return cls(history=args.history, learn_from=args.learn_from, method=args.method)

    def history_path(self) -> str:
        from caramel.consumers.history.store import default_path

        return self.history or default_path()


@dataclass(frozen=True)
class PredictOptions:
    source: BenchmarkOptions
    forecast: ForecastOptions = field(default_factory=ForecastOptions)
    metrics: tuple[str, ...] = ()  # only these metrics (table column titles)
    json: bool = False
    validate: bool = False
    suggest: int | None = None  # the N configurations that would most reduce the uncertainty

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PredictOptions:
        return cls(
            source=BenchmarkOptions.from_args(args),
            forecast=ForecastOptions.from_args(args),
            metrics=tuple(args.metric),
            json=args.format == "json",
            validate=args.validate,
            suggest=args.suggest,
        )


def predicted_time(
    bench: Benchmark, history: str | None, learn_from: str | None, systems: list[str], margin: float
) -> Benchmark:
    """`bench run --time-from-prediction`: the benchmark with its jobs' time limit predicted (a
    system whose scheduler writes job scripts)."""
    from caramel.adapters.backends import schedulers
    from caramel.consumers.history.store import default_path
    from caramel.consumers.predict.cost import job_costs
    from caramel.consumers.predict.service import make_forecast
    from caramel.consumers.predict.timelimit import with_predicted_time

    system = bench.system
    scheduler = schedulers.get(system.scheduler) if system is not None else None
    if scheduler is None or not scheduler.writes_job_scripts():
        print(
            "note: --time-from-prediction: "
            "the system's scheduler takes no job scripts, nothing to set",
            file=sys.stderr,
        )
        return bench
    forecast = make_forecast(bench, history or default_path(), None, learn_from, systems)
    bench, line = with_predicted_time(bench, job_costs(forecast), margin / 100, scheduler.time_text)
    print(
        f"note: {line}" + (f" ({learned_line(forecast)})" if forecast.learned_from else ""),
        file=sys.stderr,
    )
    return bench


def run(args: argparse.Namespace) -> int:
    return predict(PredictOptions.from_args(args), sys.stdout)


def predict(options: PredictOptions, out: TextIO) -> int:
    """`bench predict`: each benchmark's predictions, their validation, or what to measure next."""
    from caramel.consumers.predict.service import make_forecast

    for bench in load_named(options.source).benchmarks:
        if options.suggest is not None:
            print_suggestions(bench, options, out)
            continue
        forecast = make_forecast(
            bench,
            options.forecast.history_path(),
            list(options.metrics),
            options.forecast.learn_from,
            list(options.source.systems),
            validate=True,
            method=options.forecast.method,
        )
        _print_forecast(forecast, options, out)
        for line in forecast.declined:
            print(f"warning: not predicted: {line}", file=sys.stderr)
    return 0


def _print_forecast(forecast: Forecast, options: PredictOptions, out: TextIO) -> None:
    """The forecast as asked: the kernels method's, its validation, JSON or the table."""
    fmt = "json" if options.json else "table"
    if forecast.method == "kernels":
        print_kernel_forecast(forecast, fmt, options.validate, out)
    elif options.validate:
        print_validation(forecast, fmt, out)
    elif options.json:
        print(json.dumps(_finite(_predictions_json(forecast)), indent=1), file=out)
    else:
        print_predictions(forecast, out)


def _predictions_json(forecast: Forecast) -> dict[str, object]:
    doc: dict[str, object] = {
        "benchmark": forecast.benchmark,
        "system": forecast.system,
        "predictions": [p.as_json() for p in forecast.predictions],
    }
    if forecast.learned_from:
        doc["learned_from"] = {"system": forecast.learned_from, "peak_ratio": forecast.ratio}
    return doc


def _finite(doc: object) -> object:
    """`doc` (JSON's data) with each infinite or NaN float as None (null)."""
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_finite(v) for v in doc]
    return None if isinstance(doc, float) and not math.isfinite(doc) else doc


def _g(value: float | None) -> str:
    from caramel.stages.report.readable import number

    return "?" if value is None or not math.isfinite(value) else number(value)


def print_rows(rows: list[list[str]], out: TextIO) -> None:
    """The first row is the header."""
    from caramel.cli.tables import print_table

    print_table(out, rows[0], rows[1:], indent=2)


def learned_line(forecast: Forecast) -> str:
    if not forecast.learned_from:
        return ""
    return (
        f"learned across systems: from the history of {forecast.learned_from}, "
        "times and rates scaled by the peak rates "
        f"{forecast.system}/{forecast.learned_from} = {forecast.ratio:.4g} "
        "(docs/predict.md: limits)"
    )


def print_predictions(forecast: Forecast, out: TextIO) -> None:
    """`bench predict`: one row per workpackage and metric, with its interval and model."""
    from caramel.consumers.predict.points import PREDICTION_INTERVAL, PREDICTION_LEVEL

    print(
        f"benchmark {forecast.benchmark} on {forecast.system or '(no system)'}: "
        f"{plural(len({p.id for p in forecast.predictions}), 'workpackage')} predicted",
        file=out,
    )
    if forecast.learned_from:
        print(learned_line(forecast), file=out)
    interval = f"{100 * PREDICTION_LEVEL:g}% interval"
    rows = [["id", "parameters", "metric", "value", interval, "points", "model", "extrapolated"]]
    print_rows(rows + [_prediction_row(p) for p in forecast.predictions], out)
    print(f"{interval}: {PREDICTION_INTERVAL} (docs/predict.md)", file=out)
    _note_unvalidated(forecast, out)


def _note_unvalidated(forecast: Forecast, out: TextIO) -> None:
    """A note naming the metrics whose models could not be validated: too few configurations."""
    thin = [c for c in forecast.choices if c.models and not c.validated]
    if thin:
        print(
            "note: too few measured configurations to validate a model for "
            f"{', '.join(c.data.name for c in thin)}; "
            "bench predict ... --suggest 3 says what to measure next",
            file=out,
        )


def _prediction_row(p: Prediction) -> list[str]:
    return [
        str(p.id),
        clip(_configuration(p.parameters), CELL_WIDTH),
        p.metric + (f"[{p.unit}]" if p.unit else ""),
        _g(p.value),
        f"{_g(p.low)} .. {_g(p.high)}",
        str(p.points),
        p.model,
        ("yes: " + _outside(p)) if p.extrapolated else "",
    ]


def _outside(p: Prediction) -> str:
    """The parameters outside the measured range: the first five, then how many more."""
    more = f",+{len(p.outside) - 5}" if len(p.outside) > 5 else ""
    return ",".join(p.outside[:5]) + more


class _Validation(TypedDict):
    """One model's leave-one-out validation of one metric (`bench predict --validate`)."""

    metric: str
    model: str
    configurations: int
    predicted: int
    median_ape: float | None
    p90_ape: float | None
    used: bool
    used_outside_range: bool


def print_validation(forecast: Forecast, fmt: str, out: TextIO) -> None:
    """`bench predict --validate`: each model's leave-one-out error per metric, and which models
    predict uses."""
    entries = [entry for choice in forecast.choices for entry in _validations(choice)]
    if fmt == "json":
        doc = {"benchmark": forecast.benchmark, "system": forecast.system, "validation": entries}
        print(json.dumps(_finite(doc), indent=1), file=out)
        return
    _print_validation_table(forecast, entries, out)


def _print_validation_table(forecast: Forecast, entries: list[_Validation], out: TextIO) -> None:
    print(
        f"leave-one-out over the history of {forecast.benchmark} "
        f"on {forecast.system or '(no system)'} "
        "(absolute percentage error of each held-out configuration's mean):",
        file=out,
    )
    if forecast.learned_from:
        print(learned_line(forecast), file=out)
    rows = [["metric", "model", "held out", "predicted", "median %", "p90 %", "used by predict"]]
    print_rows(rows + [_validation_row(e) for e in entries], out)


def _validations(choice: Choice) -> list[_Validation]:
    """A metric's validation per model; a metric too thin to validate: its model, unvalidated,
    used everywhere."""
    if not choice.validations:
        return [
            {
                "metric": choice.data.name,
                "model": choice.chosen,
                "configurations": len(choice.data.points),
                "predicted": 0,
                "median_ape": None,
                "p90_ape": None,
                "used": True,
                "used_outside_range": True,
            }
        ]
    outward = choice.outward[0].name if choice.outward else None
    return [
        {
            "metric": choice.data.name,
            "model": v.model,
            "configurations": v.held_out,
            "predicted": len(v.errors),
            "median_ape": v.median,
            "p90_ape": v.p90,
            "used": v.model == choice.chosen,
            "used_outside_range": v.model == outward,
        }
        for v in choice.validations
    ]


def _validation_row(e: _Validation) -> list[str]:
    used = ["inside the measured range"] if e["used"] else []
    used += ["outside it"] if e["used_outside_range"] else []
    return [
        e["metric"],
        e["model"],
        str(e["configurations"]),
        str(e["predicted"]),
        _g(e["median_ape"]),
        _g(e["p90_ape"]),
        ("<- used " + " and ".join(used)) if used else "",
    ]


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
        [str(t.id), _configuration(t.config), why] for t, why in chosen
    ]
    print_rows(rows, out)
    if not chosen:
        print(
            "  nothing: every configuration of the plan was measured "
            "(other tags give other candidates)",
            file=out,
        )


def _configuration(parameters: dict[str, str]) -> str:
    """A configuration as `k=v,k=v`."""
    return ",".join(f"{k}={v}" for k, v in parameters.items())


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
        doc["cost"] = _finite(_cost_json(forecast, costs, campaign))
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


def method_json(forecast: Forecast) -> dict[str, object]:
    doc: dict[str, object] = {"method": forecast.method, "why": forecast.why}
    found = forecast.kernels
    if found is not None:
        doc["microbenchmark_runs"] = found.models.runs
        doc["overhead"] = {
            "seconds_per_launch": found.overhead.per_launch,
            "learned_on": found.overhead.system or None,
            "configurations": found.overhead.configurations,
        }
        doc["profiles"] = found.profile_summary()
        doc["unmapped_operators"] = found.unmapped
        doc["approximated_kernels"] = found.approximated
    return doc


def method_line(forecast: Forecast) -> str:
    why = f" ({forecast.why})" if forecast.why else ""
    if forecast.kernels is None:
        return f"method: history: the models of bench predict over this benchmark's runs{why}"
    found = forecast.kernels
    runs = ", ".join(found.models.runs) or "?"
    overhead = found.overhead
    learned = (
        f"overhead {overhead.per_launch * 1e6:.3g} us per kernel launch, learned from "
        f"{overhead.configurations} configuration(s) on {overhead.system}"
        if overhead.system
        else "no per-launch overhead (no system has runs of this benchmark and microbenchmarks)"
    )
    gaps = f"; {found.gaps()}" if found.gaps() else ""
    return (
        f"method: kernels: {forecast.system}'s kernel models (microbenchmark run {runs}) "
        "summed over each "
        f"workpackage's execution profile ({found.profile_summary()}){why}; {learned}{gaps}"
    )


class _KernelValidation(TypedDict):
    """One kernel's leave-one-out validation (`bench predict --method kernels --validate`)."""

    kind: str
    dtype: str
    cases: int
    median_ape: float | None
    max_ape: float | None
    model: str


def print_kernel_forecast(forecast: Forecast, fmt: str, validate: bool, out: TextIO) -> None:
    """`bench predict --method kernels`: the predictions, or (--validate) the kernel models'
    leave-one-out errors and the end-to-end error."""
    found = forecast.kernels
    assert found is not None, "the kernels method's forecast holds its kernel models"
    kinds = [_kernel_validation(*v) for v in found.models.validation()] if validate else []
    if fmt == "json":
        print(
            json.dumps(_finite(_kernels_json(forecast, found, kinds, validate)), indent=1), file=out
        )
        return
    print(method_line(forecast), file=out)
    if validate:
        _print_kernel_validation(forecast, found, kinds, out)
        return
    print_predictions(forecast, out)


def _kernel_validation(
    kind: str, dtype: str, cases: int, errors: list[float], model: str
) -> _KernelValidation:
    return {
        "kind": kind,
        "dtype": dtype,
        "cases": cases,
        "median_ape": _median(errors),
        "max_ape": max(errors) if errors else None,
        "model": model,
    }


def _kernels_json(
    forecast: Forecast, found: KernelForecast, kinds: list[_KernelValidation], validate: bool
) -> dict[str, object]:
    doc: dict[str, object] = {
        "benchmark": forecast.benchmark,
        "system": forecast.system,
        **method_json(forecast),
        "predictions": [p.as_json() for p in forecast.predictions],
    }
    if validate:
        doc["kernels_validation"] = kinds
        doc["end_to_end_ape"] = found.end_to_end
    return doc


def _print_kernel_validation(
    forecast: Forecast, found: KernelForecast, kinds: list[_KernelValidation], out: TextIO
) -> None:
    print(
        f"leave-one-out of {forecast.system}'s kernel models "
        "(each microbenchmark case predicted from the others):",
        file=out,
    )
    rows = [["kernel", "dtype", "cases", "median %", "worst %", "model"]]
    rows += [
        [k["kind"], k["dtype"], str(k["cases"]), _g(k["median_ape"]), _g(k["max_ape"]), k["model"]]
        for k in kinds
    ]
    print_rows(rows, out)
    if found.end_to_end:
        print(
            f"end to end on {forecast.system}'s own runs of {forecast.benchmark} "
            "(overhead learned from the others): "
            f"median {_g(_median(found.end_to_end))} %, worst {_g(max(found.end_to_end))} %",
            file=out,
        )


def _median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None
