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

    fmt = "json" if options.json else "table"
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
        if forecast.method == "kernels":
            print_kernel_forecast(forecast, fmt, options.validate, out)
        elif options.validate:
            print_validation(forecast, fmt, out)
        elif options.json:
            doc: dict[str, object] = {
                "benchmark": forecast.benchmark,
                "system": forecast.system,
                "predictions": [p.as_json() for p in forecast.predictions],
            }
            if forecast.learned_from:
                doc["learned_from"] = {
                    "system": forecast.learned_from,
                    "peak_ratio": forecast.ratio,
                }
            print(json.dumps(_finite(doc), indent=1), file=out)
        else:
            print_predictions(forecast, out)
        for line in forecast.declined:
            print(f"warning: not predicted: {line}", file=sys.stderr)
    return 0


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
    print(
        f"benchmark {forecast.benchmark} on {forecast.system or '(no system)'}: "
        f"{plural(len({p.id for p in forecast.predictions}), 'workpackage')} predicted",
        file=out,
    )
    if forecast.learned_from:
        print(learned_line(forecast), file=out)
    from caramel.consumers.predict.points import PREDICTION_INTERVAL, PREDICTION_LEVEL

    interval = f"{100 * PREDICTION_LEVEL:g}% interval"
    rows = [["id", "parameters", "metric", "value", interval, "points", "model", "extrapolated"]]
    for p in forecast.predictions:
        outside = ",".join(p.outside[:5]) + (
            f",+{len(p.outside) - 5}" if len(p.outside) > 5 else ""
        )
        rows.append(
            [
                str(p.id),
                clip(",".join(f"{k}={v}" for k, v in p.parameters.items()), CELL_WIDTH),
                p.metric + (f"[{p.unit}]" if p.unit else ""),
                _g(p.value),
                f"{_g(p.low)} .. {_g(p.high)}",
                str(p.points),
                p.model,
                ("yes: " + outside) if p.extrapolated else "",
            ]
        )
    print_rows(rows, out)
    print(f"{interval}: {PREDICTION_INTERVAL} (docs/predict.md)", file=out)
    thin = [c for c in forecast.choices if c.models and not c.validated]
    if thin:
        print(
            "note: too few measured configurations to validate a model for "
            f"{', '.join(c.data.name for c in thin)}; "
            "bench predict ... --suggest 3 says what to measure next",
            file=out,
        )


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
    entries: list[_Validation] = []
    for choice in forecast.choices:
        for v in choice.validations:
            entries.append(
                {
                    "metric": choice.data.name,
                    "model": v.model,
                    "configurations": v.held_out,
                    "predicted": len(v.errors),
                    "median_ape": v.median,
                    "p90_ape": v.p90,
                    "used": v.model == choice.chosen,
                    "used_outside_range": bool(choice.outward)
                    and v.model == choice.outward[0].name,
                }
            )
        if not choice.validations:
            entries.append(
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
            )
    if fmt == "json":
        print(
            json.dumps(
                _finite(
                    {
                        "benchmark": forecast.benchmark,
                        "system": forecast.system,
                        "validation": entries,
                    }
                ),
                indent=1,
            ),
            file=out,
        )
        return
    print(
        f"leave-one-out over the history of {forecast.benchmark} "
        f"on {forecast.system or '(no system)'} "
        "(absolute percentage error of each held-out configuration's mean):",
        file=out,
    )
    if forecast.learned_from:
        print(learned_line(forecast), file=out)
    rows = [["metric", "model", "held out", "predicted", "median %", "p90 %", "used by predict"]]
    for e in entries:
        used = ["inside the measured range"] if e["used"] else []
        used += ["outside it"] if e["used_outside_range"] else []
        rows.append(
            [
                e["metric"],
                e["model"],
                str(e["configurations"]),
                str(e["predicted"]),
                _g(e["median_ape"]),
                _g(e["p90_ape"]),
                ("<- used " + " and ".join(used)) if used else "",
            ]
        )
    print_rows(rows, out)


def print_suggestions(bench: Benchmark, options: PredictOptions, out: TextIO) -> None:
    from caramel.consumers.predict.points import PredictError, load_points, targets_of
    from caramel.consumers.predict.service import pick_metrics, record_command
    from caramel.consumers.predict.suggest import suggest
    from caramel.stages.expand.plan import make_plan
    from caramel.stages.spec.units import is_time_unit

    system = bench.system.name if bench.system is not None else ""
    targets = targets_of(bench, make_plan(bench, run_id=0))
    try:
        data = pick_metrics(
            load_points(
                options.forecast.history_path(),
                bench.name,
                system,
                options.forecast.learn_from,
                record_command(bench),
            ),
            list(options.metrics),
        )
    except PredictError as exc:
        if options.metrics:
            raise
        print(f"note: {exc.message}: any configuration teaches something", file=sys.stderr)
        data = []
    timed = [
        d
        for d in data
        if d.direction == "lower" and ("time" in d.name.lower() or is_time_unit(d.unit))
    ]
    metric = (timed or data)[0] if timed or data else None
    table = metric.table if metric else next(iter(targets), "")
    chosen = suggest(
        metric.points if metric else [],
        targets.get(table, []),
        targets.get(table, []),
        options.suggest or 0,
    )
    if options.json:
        print(
            json.dumps(
                {
                    "benchmark": bench.name,
                    "system": system,
                    "metric": metric.name if metric else None,
                    "suggestions": [
                        {"id": t.id, "parameters": t.config, "why": why} for t, why in chosen
                    ],
                },
                indent=1,
            ),
            file=out,
        )
        return
    print(
        f"measure next ({bench.name} on {system or '(no system)'}"
        + (f", for {metric.name}" if metric else "")
        + "):",
        file=out,
    )
    rows = [["id", "parameters", "why"]] + [
        [str(t.id), ",".join(f"{k}={v}" for k, v in t.config.items()), why] for t, why in chosen
    ]
    print_rows(rows, out)
    if not chosen:
        print(
            "  nothing: every configuration of the plan was measured "
            "(other tags give other candidates)",
            file=out,
        )


def _span(v: tuple[float, float, float], fmt: str = ".3g") -> str:
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
        doc["cost"] = _finite(
            {
                "system": forecast.system,
                "learned_from": forecast.learned_from,
                "peak_ratio": forecast.ratio,
                **campaign,
                **method_json(forecast),
                "jobs": [
                    {
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
                    for c in costs
                ],
            }
        )
        print(json.dumps(doc, indent=1), file=out)
        return
    print_plan(plan, out)
    print(
        f"predicted cost on {forecast.system or '(no system)'} (bench predict; docs/predict.md):",
        file=out,
    )
    if forecast.learned_from:
        print("  " + learned_line(forecast), file=out)
    print("  " + method_line(forecast), file=out)
    rows = [["id", "nodes", "job time (s)", "node-hours", "model", "note"]]
    for c in costs:
        note = ("capped by predict_job_limit; " if c.capped else "") + (
            "extrapolated" if c.extrapolated else ""
        )
        rows.append(
            [
                str(c.id),
                str(c.nodes),
                _span(c.seconds),
                _span(c.node_hours),
                c.model,
                note.strip("; "),
            ]
        )
    print_rows(rows, out)
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
    energy = campaign["energy_wh"]
    print(
        f"energy: {_span(energy)} Wh"
        if energy
        else "energy: not predicted (the history holds no energy figure "
        "for this benchmark and system)",
        file=out,
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
    found = forecast.kernels
    assert found is not None, "the kernels method's forecast holds its kernel models"
    kinds: list[_KernelValidation] = (
        [
            {
                "kind": kind,
                "dtype": dtype,
                "cases": cases,
                "median_ape": _median(errors),
                "max_ape": max(errors) if errors else None,
                "model": model,
            }
            for kind, dtype, cases, errors, model in found.models.validation()
        ]
        if validate
        else []
    )
    if fmt == "json":
        doc: dict[str, object] = {
            "benchmark": forecast.benchmark,
            "system": forecast.system,
            **method_json(forecast),
            "predictions": [p.as_json() for p in forecast.predictions],
        }
        if validate:
            doc["kernels_validation"] = kinds
            doc["end_to_end_ape"] = found.end_to_end
        print(json.dumps(_finite(doc), indent=1), file=out)
        return
    print(method_line(forecast), file=out)
    if validate:
        print(
            f"leave-one-out of {forecast.system}'s kernel models "
            "(each microbenchmark case predicted from the others):",
            file=out,
        )
        rows = [["kernel", "dtype", "cases", "median %", "worst %", "model"]]
        rows += [
            [
                k["kind"],
                k["dtype"],
                str(k["cases"]),
                _g(k["median_ape"]),
                _g(k["max_ape"]),
                k["model"],
            ]
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
        return
    print_predictions(forecast, out)


def _median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None
