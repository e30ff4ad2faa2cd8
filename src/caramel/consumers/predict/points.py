"""What the models learn from and predict for: measured configurations from the history (read
only, through `caramel.consumers.history`) and the workpackages of a plan, both keyed by a table's
parameter columns (the configuration the history stores with every figure).

The history keeps only the table's parameter columns; the analytic model needs the declared work
too. So each history run's file is expanded again with the run's tags (nothing is run or written)
and its workpackages matched to the history's configurations; a run whose file is gone or changed
keeps its figures for the data-driven models, without work. A metric printed in several units of
one dimension (`s` by one run, `ms` by another) is learnt in the unit of its first run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from caramel.errors import CaramelError
from caramel.stages.spec.quantities import UnitMismatch, conversion

if TYPE_CHECKING:  # the history's modules are imported when the history is read
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.store import History, RunRecord
    from caramel.stages.expand.plan import Plan
    from caramel.stages.spec.model import Benchmark

# per benchmark file, tags and benchmark: per table and configuration key, a workpackage's
# parameters
Expanded = dict[str, dict[str, dict[str, object] | None]]
ExpandedCache = dict[tuple[str, tuple[str, ...], str], Expanded]


class PredictError(CaramelError):
    """What `bench predict` cannot do with the history it has (exit 2)."""


@dataclass
class Target:
    """A configuration to predict: a workpackage of the plan (or a measured one, for validation)."""

    config: dict[str, str]  # the table's parameter columns, by title, as text
    params: dict[str, object] | None = None  # every parameter of the workpackage (None: unknown)
    id: int = -1

    @property
    def key(self) -> str:
        return json.dumps(self.config, sort_keys=True)


@dataclass
class Point(Target):
    """A measured configuration: its repeats' values (from every run that measured it)."""

    samples: list[float] = field(default_factory=list)
    system: str = ""


@dataclass
class MetricData:
    table: str
    name: str
    unit: str
    direction: str
    points: list[Point] = field(default_factory=list)


def table_columns(bench: Benchmark) -> dict[str, list[tuple[str, str]]]:
    """Per table: (title, name) of every column (which of them are parameters, the plan says)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for result in bench.results:
        for table in result.tables:
            if table.output == "table":
                out[table.name] = [(c.title or c.name, c.name) for c in table.columns]
    return out


def _analysed_steps(bench: Benchmark) -> set[str]:
    return {a.step for analyser in bench.analysers.values() for a in analyser.analyses}


def targets_of(bench: Benchmark, plan: Plan) -> dict[str, list[Target]]:
    """Per table, one target per workpackage of the analysed steps (first iteration)."""
    steps = _analysed_steps(bench)
    out: dict[str, list[Target]] = {}
    for wp in plan.workpackages:
        if wp.step.name not in steps or wp.iteration:
            continue
        params = wp.params().typed_values()
        for table, columns in table_columns(bench).items():
            config = {title: str(params[name]) for title, name in columns if name in params}
            out.setdefault(table, []).append(Target(config, params, wp.id))
    return out


def _expanded(run: RunRecord, cache: ExpandedCache) -> Expanded:
    """Per table and configuration key: the parameters of that run's workpackage (re-expanded)."""
    ident = (run.file, tuple(run.tags), run.benchmark)
    if ident not in cache:
        cache[ident] = {}
        try:
            from caramel.adapters.systems import find_system, with_system
            from caramel.stages.expand.plan import make_plan
            from caramel.stages.spec.loader import load

            benches = [b for b in load(run.file, set(run.tags)) if b.name == run.benchmark]
            if benches:
                bench = with_system(benches[0], find_system(set(run.tags)))
                for table, targets in targets_of(bench, make_plan(bench, run_id=0)).items():
                    cache[ident][table] = {t.key: t.params for t in targets}
        except (CaramelError, OSError):
            pass  # the file is gone or no longer expands: its figures stay, without work
    return cache[ident]


def _missing(path: str, benchmark: str, source: str, what: str, hint: str) -> PredictError:
    return PredictError(
        f"no history of benchmark '{benchmark}' {what}(history {path})".replace("  ", " "),
        hint=hint,
    )


def load_points(
    path: str, benchmark: str, system: str, learn_from: str | None = None, record: str = ""
) -> list[MetricData]:
    """Every metric of `benchmark` measured on `learn_from` (default: `system`), with its points.
    `record`: the command that would record some (named in the error when there is no history)."""
    from caramel.consumers.history.engine import is_url
    from caramel.consumers.history.store import History

    source = learn_from if learn_from is not None else system
    record = (
        record or f"bench run FILE --tag ... {source or 'SYSTEM'}"
    ) + " --repeat 3 && bench result -i last"
    if not is_url(path) and not os.path.isfile(path):
        raise _missing(
            path, benchmark, source, "(the history file does not exist) ", f"record some: {record}"
        )
    with History.open(path) as history:
        return _gather(history, _runs_on(history, benchmark, source, path, record))


def _runs_on(
    history: History, benchmark: str, source: str, path: str, record: str
) -> list[RunRecord]:
    """The runs of `benchmark` on system `source`; a PredictError saying what the history holds
    instead, and how to record some (`record`)."""
    runs = history.runs(benchmark)
    if not runs:
        raise _missing(path, benchmark, source, "", _held(history) + f"record some: {record}")
    here = [r for r in runs if r.system == source]
    if not here:
        raise _missing(
            path, benchmark, source, f"on system '{source or '(none)'}' ", _elsewhere(runs, record)
        )
    return here


def _held(history: History) -> str:
    """The benchmarks the history holds, as the start of a hint ("" for none)."""
    known = sorted({r.benchmark for r in history.runs()})
    return "it holds: " + ", ".join(known) + "; " if known else ""


def _elsewhere(runs: list[RunRecord], record: str) -> str:
    """The hint for a benchmark measured on other systems only: learn across them, or record."""
    systems = sorted({r.system or "(none)" for r in runs})
    return (
        f"it has runs on {', '.join(systems)}; learn across systems with --from "
        f"{systems[0]} (scaled by the systems' peak rates), or record some: {record}"
    )


def _factor(metric: Metric, data: MetricData, run: RunRecord) -> float:
    """The factor taking `metric` (of `run`) into the unit of the metric's first run (`data`): one
    model learns from one unit (spec.quantities.conversion; PredictError across dimensions)."""
    try:
        return conversion(metric.unit, data.unit)
    except UnitMismatch as exc:
        where = run.run_dir or run.run_key
        raise PredictError(
            f"metric '{data.name}' of run {where}: {exc.message}; "
            "the history's runs of one benchmark printed it as different quantities",
            hint="give the figure one quantity in every run (a time, or a rate)",
        ) from None


def _gather(history: History, runs: list[RunRecord]) -> list[MetricData]:
    cache: ExpandedCache = {}
    gathered = _Gathered()
    figures = history.metrics_by_run(runs[0].benchmark) if runs else {}  # one query for every run
    for run in runs:
        expanded = _expanded(run, cache)
        for m in figures.get(run.run_key, []):
            if not _is_job_id(m.name):  # a number, not a measure
                gathered.add(m, run, expanded)
    return [d for d in gathered.metrics.values() if d.points]


def _is_job_id(name: str) -> bool:
    return "jobid" in name.lower().replace(" ", "").replace("_", "")


@dataclass
class _Gathered:
    """The metrics and their points (one per configuration) as the runs' figures are read."""

    metrics: dict[tuple[str, str], MetricData] = field(default_factory=dict)
    points: dict[tuple[str, str, str], Point] = field(default_factory=dict)

    def add(self, m: Metric, run: RunRecord, expanded: Expanded) -> None:
        """The figure's samples, in its metric's first unit, to its configuration's point."""
        data = self.metrics.get((m.table, m.name))
        if data is None:
            data = self.metrics[(m.table, m.name)] = MetricData(
                m.table, m.name, m.unit, m.direction
            )
        factor = _factor(m, data, run)
        point = self._point(data, m, expanded, run.system)
        point.samples.extend(s * factor for s in m.samples if s == s)

    def _point(self, data: MetricData, m: Metric, expanded: Expanded, system: str) -> Point:
        """The point of the figure's configuration, new (with the workpackage's parameters from
        `expanded`) the first time."""
        config = {k: str(v) for k, v in m.row.items()}
        key = json.dumps(config, sort_keys=True)
        point = self.points.get((m.table, m.name, key))
        if point is None:
            params = expanded.get(m.table, {}).get(key)
            point = self.points[(m.table, m.name, key)] = Point(
                config, params, samples=[], system=system
            )
            data.points.append(point)
        return point


PREDICTION_LEVEL = 0.9  # every model's interval is a 90 % one (regression.Z90, kernels.Z90)
PREDICTION_INTERVAL = (
    "prediction interval for one more measurement under the model:"
    " exp(mean ± z sd) with the model's predictive sd in log space (Student's t"
    " of the log samples where no parameter varies); the error of the model's"
    " form is not in it"
)


@dataclass
class Prediction:
    id: int
    parameters: dict[str, str]
    metric: str
    unit: str
    value: float
    low: float | None
    high: float | None
    points: int
    extrapolated: bool
    model: str
    outside: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "parameters": self.parameters,
            "metric": self.metric,
            "unit": self.unit,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "level": PREDICTION_LEVEL,
            "interval": PREDICTION_INTERVAL,
            "points": self.points,
            "extrapolated": self.extrapolated,
            "model": self.model,
        }
