"""The plots of one benchmark, as data for the page's script (which draws them with plotly.js):
each metric against each swept parameter (one trace per system), energy against throughput, and
each metric's history (one trace per configuration) with regressions marked; a metric that none of
these shows (one run, nothing swept) gets a plot of its latest figure per configuration, so every
figure the summary lists is drawn. A metric is a table, name, unit and copy aggregate
(sources.Figure.metric): a `performance` table's rows of different units, and a copies table's sum,
are separate plots.

A plot is a dict: `kind`, `title`, plotly `xaxis`/`yaxis`, and `series`, each with its points'
`x` (absent for history plots: the run's date), `y`, `sd`, `ci` (the half-width of the mean's 99 %
Student's t interval, shown on hover and in the plot's CSV; 0: one sample, no interval), `run`
(index into the page's runs, which hold the provenance shown on hover) and `bad` (indices of
points that regressed).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypedDict, TypeVar

import numpy as np

from caramel.consumers.pages.axes import (
    Axis,
    axis_value,
    date_axis,
    is_scaling,
    titled,
    titled_metric,
    x_axis,
    y_axis,
)
from caramel.consumers.pages.marks import Marks, drawn
from caramel.consumers.pages.sources import COPY, Collection, Figure, MetricKey
from caramel.consumers.pages.thinning import regressed_pairs
from caramel.stages.analyse.intervals import LEVEL, t_quantile

PlotKind = Literal["sweep", "energy", "history", "latest"]
Line = tuple[str, str]  # a plot's line: the system label and a configuration


X = TypeVar("X", float, str)  # a point's x: a swept value or a throughput, or a configuration


@dataclass(frozen=True)
class Point(Generic[X]):
    """A point of a plotted series: `x` a swept value or throughput, or (latest plots) a
    configuration's name; the figure's mean, sd and repeats; the run's index into the page's."""

    x: X
    mean: float
    sd: float
    run: int
    n: int


class _SeriesBase(TypedDict):
    group: str  # the system label
    config: str  # the configuration by what varies
    params: str  # the parameters the same throughout, shown on hover
    y: list[float]
    sd: list[float]
    run: list[int]
    bad: list[int]


class Intervals(TypedDict, total=False):
    """A series' intervals (interval_fields): each half-width, or one factor of the sds."""

    ci: list[float]
    cf: float


class Series(_SeriesBase, Intervals, total=False):
    """A plot's series as page.js reads it (history series have no `x`: their runs' dates)."""

    x: list[float] | list[str]
    configs: list[str]  # energy and latest plots: each point's configuration
    changes: list[dict[str, object]]  # history plots: change points (pages.marks.drawn)


class _PlotBase(TypedDict):
    kind: PlotKind
    title: str
    metric: list[str]  # Figure.metric
    xaxis: Axis
    yaxis: Axis
    ideal: bool  # an ideal-scaling line is drawn
    higher: bool  # more is better
    series: list[Series]


class Plot(_PlotBase, total=False):
    """A plot as page.js draws it."""

    param: str  # sweep plots: the swept parameter
    lines: bool  # False: points only
    id: str  # set by pages.render
    bench: str


def _num(value: float) -> float:
    """Six significant digits: what a plot can show, and a third of the page's bytes."""
    return float(f"{value:.6g}")


def _spread(value: float) -> float:
    """A spread (sd, an interval's half-width) to five significant digits, as the page shows it
    (page.js `fmt`): an sd of a few repeats is itself uncertain by tens of percent, and the digits
    past that are a tenth of a big history's page."""
    return float(f"{value:.5g}")


def current(coll: Collection, figures: list[Figure]) -> list[Figure]:
    """Per system, table, configuration and metric: the figure of the latest run that has it."""
    latest: dict[tuple[str, str, str, str], Figure] = {}
    for f in figures:
        key = (coll.runs[f.run].label, f.table, f.config, f.name)
        held = latest.get(key)
        if held is None or (coll.runs[f.run].record.started or 0) >= (
            coll.runs[held.run].record.started or 0
        ):
            latest[key] = f
    return list(latest.values())


def _swept(figures: list[Figure]) -> dict[str, dict[float, str]]:
    values: dict[str, dict[float, str]] = defaultdict(dict)
    for f in figures:
        for k, v in f.row.items():
            if k == COPY:
                continue  # copy 0, 1, 2 are users at once, not a size swept
            number = axis_value(v)
            if number is not None:
                values[k][number] = v
    return {k: v for k, v in values.items() if len(v) > 1}


@functools.lru_cache(maxsize=4096)
def plotted(name: str) -> bool:
    """Numbers that are labels, not measurements (a job id), are not plotted."""
    lowered = name.lower().replace(" ", "").replace("_", "")
    return not (lowered.endswith("id") and len(lowered) <= 6)


def _metrics(figures: list[Figure], constant: bool = False) -> dict[MetricKey, list[Figure]]:
    """Each plotted metric's figures (Figure.metric); a metric with one value throughout (a fixed
    iteration count) has nothing to show over time or a sweep and is left out unless `constant`."""
    out: dict[MetricKey, list[Figure]] = defaultdict(list)
    for f in figures:
        out[f.metric].append(f)
    return {
        k: v for k, v in out.items() if plotted(k[1]) and (constant or len({f.mean for f in v}) > 1)
    }


def ci_half(sd: list[float], n: list[int]) -> list[float]:
    """Per figure the half-width of its mean's 99 % interval, t(0.99, n - 1)·sd/√n
    (analyse/intervals mean_interval, for a series at once); 0 where n < 2 (no spread)."""
    sds, counts = np.asarray(sd, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        half = t_quantile(LEVEL, counts - 1) * sds / np.sqrt(counts)
    return [_spread(h) for h in np.where((counts > 1) & np.isfinite(half), half, 0.0).tolist()]


def interval_fields(sd: list[float], n: list[int]) -> Intervals:
    """A series' intervals as the page carries them: where every figure has the same number of
    samples (2 or more), one factor `cf` that page.js multiplies each sd by, t(0.99, n - 1)/√n (a
    third of a big history's page is these half-widths); else each half-width, `ci` (ci_half)."""
    counts = set(n)
    if len(counts) == 1 and min(counts) > 1:
        (count,) = counts
        return {"cf": interval_factor(count)}
    return {"ci": ci_half(sd, n)}


@functools.lru_cache(maxsize=1024)
def interval_factor(count: int) -> float:
    """t(0.99, count - 1)/√count to six digits, the factor of interval_fields. Once per count: a
    page's series share a few counts of samples, and scipy's t quantile costs some 40 µs a call
    (a big history's page has thousands of series)."""
    return float(f"{t_quantile(LEVEL, count - 1) / count**0.5:.6g}")


def intervals(series: Series) -> list[float]:
    """The half-widths of a series' intervals as page.js reads them (interval_fields): each
    figure's `ci`, or its sd times the series' factor `cf`."""
    if "ci" in series:
        return list(series["ci"])
    factor = series.get("cf", 0.0)
    return [sd * factor for sd in series["sd"]]


def _series(group: str, config: str, points: list[Point[X]], params: str = "") -> Series:
    """A series of points, in the order of x. Its name is the system `group` and its `config`
    (`A100 · Nodes=4`): page.js joins them (a big history's page would otherwise carry each series'
    name twice)."""
    points.sort(key=lambda p: p.x)
    series: Series = {
        "group": group,
        "config": config,
        "params": params,
        "x": [p.x for p in points],
        "y": [_num(p.mean) for p in points],
        "sd": [_spread(p.sd) for p in points],
        "run": [p.run for p in points],
        "bad": [],
    }
    _set_intervals(series, interval_fields([p.sd for p in points], [p.n for p in points]))
    return series


def _set_intervals(series: Series, fields: Intervals) -> None:
    """`series` with its intervals (interval_fields): the factor, or each half-width."""
    if "cf" in fields:
        series["cf"] = fields["cf"]
    else:
        series["ci"] = fields.get("ci", [])


def sweep_plots(coll: Collection, figures: list[Figure]) -> list[Plot]:
    """Each metric against each swept parameter, a line per system and the other parameters."""
    by_metric = _metrics(figures)
    plots = (
        _sweep_plot(coll, param, texts, metric, group)
        for param, texts in _swept(figures).items()
        for metric, group in by_metric.items()
    )
    return [plot for plot in plots if plot is not None]


def _sweep_plot(
    coll: Collection, param: str, texts: dict[float, str], metric: MetricKey, group: list[Figure]
) -> Plot | None:
    """`metric` against `param` (`texts`: each swept value as the tables wrote it); None when
    fewer than two of its figures have the parameter."""
    lines, params = _swept_lines(coll, group, param)
    if sum(len(points) for points in lines.values()) < 2:
        return None
    first = group[0]
    return {
        "kind": "sweep",
        "title": f"{_title(first)} against {param}",
        "param": param,
        "metric": list(metric),
        "xaxis": _sweep_axis(param, texts, lines),
        "yaxis": y_axis(_named(first), first.unit),
        "ideal": is_scaling(param) and first.direction in ("higher", "lower"),
        "higher": first.direction == "higher",
        "series": [
            _series(label, rest, points, params[(label, rest)])
            for (label, rest), points in sorted(lines.items())
        ],
    }


def _sweep_axis(param: str, texts: dict[float, str], lines: dict[Line, list[Point[float]]]) -> Axis:
    """The x axis of a sweep over `param`: the values its points use, as the tables wrote them."""
    used = {p.x for points in lines.values() for p in points}
    return x_axis(param, {x: texts[x] for x in used})


def _swept_lines(
    coll: Collection, group: list[Figure], param: str
) -> tuple[dict[Line, list[Point[float]]], dict[Line, str]]:
    """The points of `group`'s figures that have `param`, per line (system, the configuration
    without `param`), and each line's parameters that are the same throughout."""
    lines: dict[Line, list[Point[float]]] = defaultdict(list)
    last: dict[Line, Figure] = {}  # each line's last figure: its constant parameters are the line's
    for f in group:
        x = axis_value(f.row.get(param, ""))
        if x is None:
            continue
        line = (coll.runs[f.run].label, _without(f.label, param))
        lines[line].append(Point(x, f.mean, f.sd, f.run, f.n))
        last[line] = f
    return lines, {line: _constant(f, param) for line, f in last.items()}


def _without(label: str, param: str) -> str:
    """A configuration's label (`k=v,k=v`) without `param`'s item."""
    return ",".join(kv for kv in label.split(",") if kv and not kv.startswith(param + "="))


def _constant(f: Figure, param: str = "") -> str:
    """The parameters of a configuration that its label leaves out (they are the same
    throughout)."""
    shown = {kv.split("=", 1)[0] for kv in f.label.split(",") if kv}
    return ",".join(f"{k}={v}" for k, v in f.row.items() if k not in shown and k != param)


def _throughput(name: str) -> bool:
    """A lowercased metric name that is a rate per second (`tokens/s`, `samples per second`), not
    per joule and not a time."""
    return "/j" not in name and ("/s" in name or "second" in name) and "time" not in name


def _energy(name: str) -> bool:
    """A lowercased metric name that is an energy (`energy [wh]`), not a status."""
    return "energy" in name and "status" not in name


def _energy_pair(names: list[Line]) -> tuple[Line, Line] | None:
    """The (table, name) of a throughput and of an energy efficiency (per joule; else an energy)
    among `names`, the first of each; None unless both are there."""
    lowered = {key: key[1].lower() for key in names}
    rate = _first(lowered, _throughput)
    efficiency = _first(lowered, lambda name: "/j" in name) or _first(lowered, _energy)
    return (rate, efficiency) if rate and efficiency else None


def _first(names: dict[Line, str], test: Callable[[str], bool]) -> Line | None:
    """The first (table, name) whose lowercased name (`names`' values) `test` accepts."""
    return next((key for key, name in names.items() if test(name)), None)


def energy_plot(coll: Collection, figures: list[Figure]) -> list[Plot]:
    """Energy efficiency against throughput, a point per configuration, a series per system (none
    when the benchmark has no such pair of metrics or no run with both)."""
    by_name = {(k[0], k[1]): v for k, v in _metrics(figures).items() if not k[3]}
    pair = _energy_pair(list(by_name))
    if pair is None:
        return []
    rates, efficiencies = by_name[pair[0]], by_name[pair[1]]
    series = _energy_series(coll, rates, efficiencies)
    if not series:
        return []
    rate_name, eff_name = pair[0][1], pair[1][1]
    return [
        {
            "kind": "energy",
            "title": f"{eff_name} against {rate_name}",
            "xaxis": {"title": {"text": titled(rate_name, rates[0].unit)}, "rangemode": "tozero"},
            "yaxis": y_axis(eff_name, efficiencies[0].unit),
            "ideal": False,
            "higher": True,
            "series": series,
            "lines": False,
            "metric": list(efficiencies[0].metric),
        }
    ]


def _energy_series(
    coll: Collection, rates: list[Figure], efficiencies: list[Figure]
) -> list[Series]:
    """Per system the (throughput, efficiency) of each configuration of a run that has both, in
    the order of throughput, each point named by its configuration."""
    efficiency = {(f.run, f.config): f for f in efficiencies}
    points: dict[str, list[Point[float]]] = defaultdict(list)
    configs: dict[str, list[str]] = defaultdict(list)
    constant: dict[str, str] = {}
    for f in rates:
        e = efficiency.get((f.run, f.config))
        if e is None:
            continue
        label = coll.runs[f.run].label
        points[label].append(Point(_num(f.mean), e.mean, e.sd, f.run, e.n))
        configs[label].append(f.label)
        constant[label] = _constant(f)
    return [
        _with_configs(_series(label, "", pts[:], constant[label]), pts, configs[label])
        for label, pts in sorted(points.items())
    ]


def _with_configs(series: Series, points: list[Point[float]], configs: list[str]) -> Series:
    """`series` (its points sorted by x) with each point's configuration, `configs` being those of
    `points` in their order before sorting."""
    order = sorted(range(len(points)), key=lambda i: points[i].x)
    series["configs"] = [configs[i] for i in order]
    return series


def regressions(items: list[Figure]) -> list[int]:
    """The indices of the figures (in date order, one configuration) that regressed against the one
    before, by pages.judging.judged's rule, for a whole series at once (numpy: pages.thinning).
    Equal to `[i for i in range(1, len(items)) if judged(items[i], items[i - 1])[0] ==
    "regressed"]`."""
    way = items[0].direction if items else ""
    if len(items) < 2 or way not in ("higher", "lower"):
        return []
    values = np.array([(f.mean, f.sd, f.n) for f in items], dtype=float)
    pairs = regressed_pairs(
        values[:, 0], values[:, 1], values[:, 2], np.full(len(items) - 1, way == "higher")
    )
    return [int(i) + 1 for i in np.flatnonzero(pairs)]


def history_plots(
    coll: Collection, figures: list[Figure], marks: Marks | None = None
) -> list[Plot]:
    """Each metric's history, a line per system and configuration, its regressions and (`marks`)
    its change points, found on the whole series (pages.marks)."""
    plots = (
        _history_plot(coll, metric, group, marks) for metric, group in _metrics(figures).items()
    )
    return [plot for plot in plots if plot is not None]


def _history_plot(
    coll: Collection, metric: MetricKey, group: list[Figure], marks: Marks | None
) -> Plot | None:
    """`metric`'s history, a line per system and configuration; None when each has one run."""
    lines: dict[Line, list[Figure]] = defaultdict(list)
    for f in group:
        lines[(coll.runs[f.run].label, f.config)].append(f)
    if max(len(v) for v in lines.values()) < 2:
        return None  # one run each: nothing over time
    bench = coll.runs[group[0].run].record.benchmark
    first = group[0]
    return {
        "kind": "history",
        "title": f"history of {_title(first)}",
        "metric": list(metric),
        "xaxis": date_axis(),
        "yaxis": y_axis(_named(first), first.unit),
        "ideal": False,
        "higher": first.direction == "higher",
        "series": [
            _history_series(
                coll, label, items, drawn(marks, (bench, label, metric, config)) if marks else []
            )
            for (label, config), items in sorted(lines.items())
        ],
    }


def _history_series(
    coll: Collection, label: str, items: list[Figure], changes: list[dict[str, object]]
) -> Series:
    """One line of a history plot: the figures of a system and configuration in date order, without
    `x` (page.js takes the dates from the page's runs)."""
    items.sort(key=lambda f: coll.runs[f.run].record.started or 0)
    points = [Point(0.0, f.mean, f.sd, f.run, f.n) for f in items]  # in date order: x unused
    series = _series(label, items[0].label, points, _constant(items[0]))
    del series["x"]
    series["bad"] = _regressed(items)
    series["changes"] = changes
    return series


def _regressed(items: list[Figure]) -> list[int]:
    """The indices of a line's figures that regressed: as judged on the whole series where the
    page draws a thinned one (pages.thinning), else judged here."""
    if items[0].regressed is None:
        return regressions(items)
    return [i for i, f in enumerate(items) if f.regressed]


def _title(f: Figure) -> str:
    """The metric in a plot's title, its unit once (`GEMM(GFLOP/s)`, not `... [GFLOP/s]`)."""
    return titled_metric(f.name, f.unit, f.aggregate)


def _named(f: Figure) -> str:
    """The metric's name on an axis (the unit is added by axes.titled; the plot's title says the
    rest)."""
    return f.name


def latest_plots(coll: Collection, figures: list[Figure], shown: set[MetricKey]) -> list[Plot]:
    """For each metric no other plot shows: its latest figure per configuration and system, a point
    each with its sd, so a benchmark of one run still shows what the summary lists."""
    return [
        _latest_plot(coll, metric, group)
        for metric, group in _metrics(figures, constant=True).items()
        if metric not in shown
    ]


def _latest_plot(coll: Collection, metric: MetricKey, group: list[Figure]) -> Plot:
    """`metric`'s latest figures, a point per configuration, a series per system."""
    points: dict[str, list[Point[str]]] = defaultdict(list)
    constant: dict[str, str] = {}
    for f in group:
        label = coll.runs[f.run].label
        points[label].append(Point(f.label or "(one configuration)", f.mean, f.sd, f.run, f.n))
        constant.setdefault(label, _constant(f))
    series = []
    for label, pts in sorted(points.items()):
        s = _series(label, "", pts, constant[label])
        s["configs"] = [str(x) for x in s["x"]]
        series.append(s)
    first = group[0]
    return {
        "kind": "latest",
        "title": f"latest {_title(first)}",
        "metric": list(metric),
        "xaxis": {"title": {"text": "configuration"}, "type": "category", "automargin": True},
        "yaxis": y_axis(_named(first), first.unit),
        "ideal": False,
        "higher": first.direction == "higher",
        "series": series,
        "lines": False,
    }


def benchmark_plots(
    coll: Collection,
    figures: list[Figure],
    focus: set[int] | None = None,
    marks: Marks | None = None,
) -> list[Plot]:
    """Every plot of one benchmark's figures; `focus` (bench report): the runs the sweeps are drawn
    from; `marks`: the change points the history plots mark."""
    latest = current(coll, [f for f in figures if focus is None or f.run in focus])
    history = history_plots(coll, figures, marks)
    plots = sweep_plots(coll, latest) + energy_plot(coll, latest) + history
    shown = {_metric_key(p["metric"]) for p in plots if p["kind"] != "energy"}
    return plots + latest_plots(coll, latest, shown)


def _metric_key(metric: list[str]) -> MetricKey:
    """A plot's metric as Figure.metric holds it."""
    table, name, unit, aggregate = metric
    return table, name, unit, aggregate
