"""`bench predict FILE --tag ...`: every workpackage's metrics predicted from the history, with
90 % intervals, before anything runs; `--validate` says how well each model predicts what was
measured, `--suggest N` what to measure next, `--from SYSTEM` learns from another system.
docs/predict.md describes the models. Each report is a module of its own: predict_forecast (the
predictions), predict_validation (--validate), predict_suggest (--suggest), predict_kernels
(--method kernels), predict_cost (`bench plan --predict`), predict_text (what they share)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO

from caramel.cli.common import BenchmarkOptions, add_benchmark_args, add_predict_args, load_named
from caramel.cli.predict_forecast import predictions_json, print_predictions
from caramel.cli.predict_kernels import print_kernel_forecast
from caramel.cli.predict_suggest import print_suggestions
from caramel.cli.predict_text import finite_json, learned_line
from caramel.cli.predict_validation import print_validation

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.consumers.predict.service import Forecast
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
        print(json.dumps(finite_json(predictions_json(forecast)), indent=1), file=out)
    else:
        print_predictions(forecast, out)
