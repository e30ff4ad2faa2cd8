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

import numpy as np

from caramel.consumers.pages.axes import (
    axis_value,
    date_axis,
    is_scaling,
    titled,
    titled_metric,
    x_axis,
    y_axis,
)
from caramel.consumers.pages.marks import Marks, drawn
from caramel.consumers.pages.sources import COPY, Collection, Figure
from caramel.consumers.pages.thinning import regressed_pairs
from caramel.stages.analyse.intervals import LEVEL, t_quantile


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
    latest: dict[tuple, Figure] = {}
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


def _metrics(
    figures: list[Figure], constant: bool = False
) -> dict[tuple[str, str, str, str], list[Figure]]:
    """Each plotted metric's figures (Figure.metric); a metric with one value throughout (a fixed
    iteration count) has nothing to show over time or a sweep and is left out unless `constant`."""
    out: dict[tuple[str, str, str, str], list[Figure]] = defaultdict(list)
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


def interval_fields(sd: list[float], n: list[int]) -> dict[str, object]:
    """A series' intervals as the page carries them: where every figure has the same number of
    samples (2 or more), one factor `cf` that page.js multiplies each sd by, t(0.99, n - 1)/√n (a
    third of a big history's page is these half-widths); else each half-width, `ci` (ci_half)."""
    counts = set(n)
    if len(counts) == 1 and min(counts) > 1:
        (count,) = counts
        return {"cf": float(f"{t_quantile(LEVEL, count - 1) / count**0.5:.6g}")}
    return {"ci": ci_half(sd, n)}


def intervals(series: dict) -> list[float]:
    """The half-widths of a series' intervals as page.js reads them (interval_fields): each
    figure's `ci`, or its sd times the series' factor `cf`."""
    if "ci" in series:
        return list(series["ci"])
    return [sd * series.get("cf", 0.0) for sd in series["sd"]]


def _series(group: str, config: str, points: list[tuple], params: str = "") -> dict:
    """A series of points (x, mean, sd, run, n), in the order of x. Its name is the system `group`
    and its `config` (`A100 · Nodes=4`): page.js joins them (a big history's page would otherwise
    carry each series' name twice)."""
    points.sort(key=lambda p: p[0])
    return {
        "group": group,
        "config": config,
        "params": params,
        "x": [p[0] for p in points],
        "y": [_num(p[1]) for p in points],
        "sd": [_spread(p[2]) for p in points],
        **interval_fields([p[2] for p in points], [p[4] for p in points]),
        "run": [p[3] for p in points],
        "bad": [],
    }


def sweep_plots(coll: Collection, figures: list[Figure]) -> list[dict]:
    plots = []
    by_metric = _metrics(figures)
    for param, texts in _swept(figures).items():
        for metric, group in by_metric.items():
            series: dict[tuple[str, str], list[tuple]] = defaultdict(list)
            params: dict[tuple[str, str], str] = {}
            for f in group:
                x = axis_value(f.row.get(param, ""))
                if x is not None:
                    rest = ",".join(
                        kv for kv in f.label.split(",") if kv and not kv.startswith(param + "=")
                    )
                    series[(coll.runs[f.run].label, rest)].append((x, f.mean, f.sd, f.run, f.n))
                    params[(coll.runs[f.run].label, rest)] = _constant(f, param)
            if sum(len(p) for p in series.values()) < 2:
                continue
            used = {x for pts in series.values() for x, *_ in pts}
            plots.append(
                {
                    "kind": "sweep",
                    "title": f"{_title(group[0])} against {param}",
                    "param": param,
                    "metric": list(metric),
                    "xaxis": x_axis(param, {x: texts[x] for x in used}),
                    "yaxis": y_axis(_named(group[0]), group[0].unit),
                    "ideal": is_scaling(param) and group[0].direction in ("higher", "lower"),
                    "higher": group[0].direction == "higher",
                    "series": [
                        _series(label, rest, pts, params[(label, rest)])
                        for (label, rest), pts in sorted(series.items())
                    ],
                }
            )
    return plots


def _constant(f: Figure, param: str = "") -> str:
    """The parameters of a configuration that its label leaves out (they are the same
    throughout)."""
    shown = {kv.split("=", 1)[0] for kv in f.label.split(",") if kv}
    return ",".join(f"{k}={v}" for k, v in f.row.items() if k not in shown and k != param)


def _energy_pair(names: list[tuple[str, str]]) -> tuple[tuple[str, str], tuple[str, str]] | None:
    lowered = {key: key[1].lower() for key in names}
    rate = next(
        (
            k
            for k, n in lowered.items()
            if "/j" not in n and ("/s" in n or "second" in n or "/sec" in n) and "time" not in n
        ),
        None,
    )
    efficiency = next((k for k, n in lowered.items() if "/j" in n), None)
    if efficiency is None:
        efficiency = next(
            (k for k, n in lowered.items() if "energy" in n and "status" not in n), None
        )
    return (rate, efficiency) if rate and efficiency else None


def energy_plot(coll: Collection, figures: list[Figure]) -> list[dict]:
    by_metric = _metrics(figures)
    pair = _energy_pair([(k[0], k[1]) for k in by_metric if not k[3]])
    if pair is None:
        return []
    (_rate_table, rate_name), (_eff_table, eff_name) = pair
    by_name = {(k[0], k[1]): v for k, v in by_metric.items() if not k[3]}
    efficiency = {(f.run, f.config): f for f in by_name[pair[1]]}
    series: dict[str, list[tuple]] = defaultdict(list)
    configs: dict[str, list[str]] = defaultdict(list)
    constant: dict[str, str] = {}
    for f in by_name[pair[0]]:
        e = efficiency.get((f.run, f.config))
        if e is not None:
            series[coll.runs[f.run].label].append((_num(f.mean), e.mean, e.sd, f.run, e.n))
            configs[coll.runs[f.run].label].append(f.label)
            constant[coll.runs[f.run].label] = _constant(f)
    if not series:
        return []
    unit = by_name[pair[0]][0].unit
    out = []
    for label, pts in sorted(series.items()):
        order = sorted(range(len(pts)), key=lambda i: pts[i][0])
        s = _series(label, "", [pts[i] for i in order], constant[label])
        s["configs"] = [configs[label][i] for i in order]  # each point is another configuration
        out.append(s)
    return [
        {
            "kind": "energy",
            "title": f"{eff_name} against {rate_name}",
            "xaxis": {"title": {"text": titled(rate_name, unit)}, "rangemode": "tozero"},
            "yaxis": y_axis(eff_name, by_name[pair[1]][0].unit),
            "ideal": False,
            "higher": True,
            "series": out,
            "lines": False,
            "metric": list(by_name[pair[1]][0].metric),
        }
    ]


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
) -> list[dict]:
    """Each metric's history, a line per system and configuration, its regressions and (`marks`)
    its change points, found on the whole series (pages.marks)."""
    plots = []
    for metric, group in _metrics(figures).items():
        series: dict[tuple[str, str], list[Figure]] = defaultdict(list)
        for f in group:
            series[(coll.runs[f.run].label, f.config)].append(f)
        if max(len(v) for v in series.values()) < 2:
            continue  # one run each: nothing over time
        out = []
        bench = coll.runs[group[0].run].record.benchmark
        for (label, _config), items in sorted(series.items()):
            items.sort(key=lambda f: coll.runs[f.run].record.started or 0)
            # judged on the whole series where the page draws a thinned one (pages.thinning)
            bad = (
                [i for i, f in enumerate(items) if f.regressed]
                if items[0].regressed is not None
                else regressions(items)
            )
            shown = items[0].label
            out.append(
                {
                    "group": label,
                    "config": shown,
                    "params": _constant(items[0]),
                    "y": [_num(f.mean) for f in items],
                    "sd": [_spread(f.sd) for f in items],
                    **interval_fields([f.sd for f in items], [f.n for f in items]),
                    "run": [f.run for f in items],
                    "bad": bad,
                    "changes": drawn(marks, (bench, label, metric, items[0].config))
                    if marks
                    else [],
                }
            )
        plots.append(
            {
                "kind": "history",
                "title": f"history of {_title(group[0])}",
                "metric": list(metric),
                "xaxis": date_axis(),
                "yaxis": y_axis(_named(group[0]), group[0].unit),
                "ideal": False,
                "higher": group[0].direction == "higher",
                "series": out,
            }
        )
    return plots


def _title(f: Figure) -> str:
    """The metric in a plot's title, its unit once (`GEMM(GFLOP/s)`, not `... [GFLOP/s]`)."""
    return titled_metric(f.name, f.unit, f.aggregate)


def _named(f: Figure) -> str:
    """The metric's name on an axis (the unit is added by axes.titled; the plot's title says the
    rest)."""
    return f.name


def latest_plots(coll: Collection, figures: list[Figure], shown: set[tuple]) -> list[dict]:
    """For each metric no other plot shows: its latest figure per configuration and system, a point
    each with its sd, so a benchmark of one run still shows what the summary lists."""
    plots = []
    for metric, group in _metrics(figures, constant=True).items():
        if metric in shown:
            continue
        series: dict[str, list[tuple]] = defaultdict(list)
        for f in group:
            config = f.label or "(one configuration)"
            series[coll.runs[f.run].label].append((config, f.mean, f.sd, f.run, f.n, f))
        out = []
        for label, points in sorted(series.items()):
            s = _series(label, "", [p[:5] for p in points], _constant(points[0][5]))
            s["configs"] = s["x"]
            out.append(s)
        plots.append(
            {
                "kind": "latest",
                "title": f"latest {_title(group[0])}",
                "metric": list(metric),
                "xaxis": {
                    "title": {"text": "configuration"},
                    "type": "category",
                    "automargin": True,
                },
                "yaxis": y_axis(_named(group[0]), group[0].unit),
                "ideal": False,
                "higher": group[0].direction == "higher",
                "series": out,
                "lines": False,
            }
        )
    return plots


def benchmark_plots(
    coll: Collection,
    figures: list[Figure],
    focus: set[int] | None = None,
    marks: Marks | None = None,
) -> list[dict]:
    """Every plot of one benchmark's figures; `focus` (bench report): the runs the sweeps are drawn
    from; `marks`: the change points the history plots mark."""
    latest = current(coll, [f for f in figures if focus is None or f.run in focus])
    history = history_plots(coll, figures, marks)
    plots = sweep_plots(coll, latest) + energy_plot(coll, latest) + history
    shown = {tuple(p["metric"]) for p in plots if p["kind"] != "energy"}
    return plots + latest_plots(coll, latest, shown)
