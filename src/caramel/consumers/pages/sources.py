"""History files gathered for a page: several at once (one per site), each read by history.reader
(read-only, checked: a missing, foreign or locked file is a user error naming it; a page is never
drawn from nothing). A figure (table and name) printed in several units of one dimension (`s` by one
run, `ms` by another) is one metric on the page, in the first of its units the history recorded:
its other figures' means and sds converted (spec.quantities), so verdicts and lines compare like
with like; units of different dimensions stay different metrics."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from caramel import redact
from caramel.consumers.history.reader import FigureKey, HistoryContents, read_history
from caramel.consumers.history.store import RunRecord, row_field
from caramel.consumers.pages.thinning import points_per_series, series_regressions, thin
from caramel.errors import RunError
from caramel.stages.spec.quantities import UnitMismatch, conversion
from caramel.vocabulary import COPY_AGGREGATES, COPY_SPREADS, Direction

COPY = "caramel_copy"  # the copy column of a copies table (engine.copies)
MetricKey = tuple[str, str, str, str]  # table, name, unit, copy aggregate: Figure.metric
NO_METRIC: MetricKey = ("", "", "", "")  # a Figure made without its metric: set from its fields
# a metric's direction as a sign: 1 more is better, -1 less is better, 0 unknown (pages.thinning)
_WAYS = {Direction.HIGHER.value: 1, Direction.LOWER.value: -1}


@dataclass
class Run:
    index: int
    record: RunRecord
    site: str
    source: str  # the history file it was read from
    label: str = (
        ""  # what the page calls its system: "system", or "system @ site" with several sites
    )
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (table, config, reason)


@dataclass(slots=True)
class Figure:
    """One metric of one configuration in one run (mean, sd, n of its repeats). Slotted: a big
    history's page makes some fifty thousand, a third faster without a dict each."""

    run: int
    table: str
    config: str  # "k=v,k=v": the configuration's key
    row: dict[str, str]
    name: str
    unit: str
    direction: str
    n: int
    mean: float
    sd: float
    label: str = (
        ""  # the configuration by the parameters that vary in its benchmark ("" when none do)
    )
    # whether it regressed against the run before in its series, judged on the whole history when
    # the page draws a thinned series (pages.thinning); None: judged from the figures drawn
    regressed: bool | None = None

    @property
    def unstable(self) -> bool:
        return self.n > 1 and bool(self.mean) and self.sd / abs(self.mean) > 0.05

    # the copy aggregate, `sum` or `mean` on a copies table's aggregate row, else "" (one copy's
    # figure, or no copies); and the metric: what is one quantity on the page (table, name, unit (a
    # `performance` table holds a unit per row) and the aggregate, never compared with one copy's
    # figure). Given by a maker that has them per key (select: a few thousand keys, fifty thousand
    # figures), else set when made: the page asks each figure for them a few times.
    aggregate: str = ""
    metric: MetricKey = NO_METRIC

    def __post_init__(self) -> None:
        if self.metric is NO_METRIC:
            copy = self.row.get(COPY, "")
            self.aggregate = copy if copy in COPY_AGGREGATES else ""
            self.metric = _metric(self.table, self.name, self.unit, self.aggregate)

    @property
    def title(self) -> str:
        """The metric as the page names it: `performance [GFLOP/s] · sum of copies`."""
        unit = f" [{self.unit}]" if self.unit and f"[{self.unit}]" not in self.name else ""
        return self.name + unit + (f" · {self.aggregate} of copies" if self.aggregate else "")


@functools.lru_cache(maxsize=4096)
def _metric(table: str, name: str, unit: str, aggregate: str) -> MetricKey:
    return table, name, unit, aggregate  # one tuple per metric, shared by its figures


NUMBERS = ("run", "key", "n", "mean", "sd")  # a figure on the page: run and key indices, numbers


def numbers_frame(*columns: np.ndarray) -> pd.DataFrame:
    """The figures' numbers as a DataFrame of the NUMBERS columns (none: an empty one), holding
    the arrays themselves (a million figures are 40 MB: a copy is a peak the process keeps)."""
    if not columns:
        columns = (np.zeros(0, np.int32), np.zeros(0, np.int32), *(np.zeros(0) for _ in range(3)))
    return pd.DataFrame(dict(zip(NUMBERS, columns, strict=True)), copy=False)


@dataclass
class Collection:
    sources: list[str]
    runs: list[Run] = field(default_factory=list)
    # the figures the page is built from: every one of a small history; of a big one those the page
    # draws (pages.thinning) and every figure of the two latest runs and of named runs (the
    # summary's)
    figures: list[Figure] = field(default_factory=list)
    baselines: dict[str, str] = field(default_factory=dict)  # name -> run key
    # every figure, as numbers (the CSV's): run (index into `runs`), key (into `keys`), n, mean, sd
    numbers: pd.DataFrame = field(default_factory=numbers_frame)
    keys: list[FigureKey] = field(default_factory=list)  # tbl, config, name, unit, direction of
    # each key; and its configuration as "k=v,k=v" and as a row
    parsed: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    thinned: bool = False  # whether the page draws fewer history points than the history holds
    # (benchmark, system label, metric) -> how many runs have it (the figures may hold fewer)
    run_counts: dict[tuple[str, str, MetricKey], int] = field(default_factory=dict)
    regressed: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=bool)
    )  # per figure of `numbers`
    # per (table, figure name): the units the page shows it in, one per dimension, the first read
    shown_units: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    dropped: int = 0  # the rows of `numbers` when they were dropped (drop_numbers)

    @property
    def sites(self) -> list[str]:
        return sorted({r.site for r in self.runs})

    @property
    def figure_count(self) -> int:
        """How many figures the history holds: the rows of `numbers`, or of those dropped."""
        return len(self.numbers) or self.dropped

    def drop_numbers(self) -> None:
        """Empty the columns of every figure (`numbers`, `regressed`) once what needs them all is
        made (the CSV, the change marks: pages.marks.find): the page is drawn from `figures`, and a
        big history's columns (32 MB for a million figures) would otherwise be held while it is
        rendered and written."""
        self.dropped = len(self.numbers)
        self.numbers = numbers_frame()
        self.regressed = np.zeros(0, dtype=bool)


@dataclass
class _Figures:
    """The columns of Collection.numbers as numpy arrays, for the selection's numpy work."""

    run: np.ndarray
    key: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray

    @classmethod
    def of(cls, out: Collection) -> _Figures:
        return cls(*(out.numbers[name].to_numpy() for name in NUMBERS))


def _add(
    contents: HistoryContents,
    out: Collection,
    seen: set[str],
    default_site: str,
    path: str,
    key_index: dict[FigureKey, int],
) -> _Figures:
    """The runs of one history added to `out` (a run already read from another file: left out), and
    its figures' columns with runs and keys numbered as in `out`, a copies table's spreads left
    out."""
    position = _add_runs(contents, out, seen, default_site, path)
    run_of = contents.numbers["run"].to_numpy()
    key_of = contents.numbers["key"].to_numpy()
    run = position[run_of]
    used = np.zeros(len(contents.keys) + 1, dtype=bool)  # the keys of the runs kept: no sort
    used[key_of if (run >= 0).all() else key_of[run >= 0]] = True
    number, scale = _add_keys(contents.keys, np.flatnonzero(used), out, path, key_index)
    for name, key_run in contents.baselines:
        out.baselines.setdefault(name, key_run)
    factor = scale[key_of] if (scale != 1.0).any() else None
    return _shown_figures(contents.numbers, run, number[key_of], factor)


def _add_runs(
    contents: HistoryContents, out: Collection, seen: set[str], default_site: str, path: str
) -> np.ndarray:
    """The runs of one history not read before added to `out`; per run of the history its index in
    `out.runs` (-1: left out)."""
    position = np.full(len(contents.runs) + 1, -1, dtype=np.int32)
    for i, record in enumerate(contents.runs):
        if record.run_key in seen:  # the same run imported into two histories: shown once
            continue
        seen.add(record.run_key)
        position[i] = len(out.runs)
        failed = contents.failures.get(record.run_key, [])
        out.runs.append(Run(len(out.runs), record, record.site or default_site, path, "", failed))
    return position


def _add_keys(
    keys: list[FigureKey],
    used: np.ndarray,
    out: Collection,
    path: str,
    key_index: dict[FigureKey, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Per key of one history (those `used` by the runs kept): its index in `out.keys` (-1: none, a
    copies table's spread), and the factor from its unit into the unit the page shows."""
    number = np.full(len(keys) + 1, -1, dtype=np.int32)
    scale = np.ones(len(keys) + 1)
    for k in used.tolist():
        tbl, config, name, unit, direction = keys[k]
        unit, scale[k] = shown_unit(out.shown_units.setdefault((tbl, name), []), unit or "")
        key = (tbl, config, name, unit, direction or "unknown")
        number[k] = _key_number(key, out, path, key_index)
    return number, scale


def _key_number(key: FigureKey, out: Collection, path: str, key_index: dict[FigureKey, int]) -> int:
    """The index of `key` in `out.keys`, added with its parsed configuration when new; -1 for a
    copies table's spread over the copies (sd, sem): no figure of its own, never a headline."""
    found = key_index.get(key)
    if found is not None:
        return found
    tbl, config, name = key[:3]
    row = row_field(path, config, f"the configuration of {tbl}/{name}", dict)
    if row.get(COPY) in COPY_SPREADS:
        return -1
    found = key_index[key] = len(out.keys)
    out.keys.append(key)
    out.parsed.append((",".join(f"{k}={v}" for k, v in row.items()), row))
    return found


def _shown_figures(
    numbers: pd.DataFrame, run: np.ndarray, key: np.ndarray, factor: np.ndarray | None
) -> _Figures:
    """The figures of a run and key the page keeps (index >= 0) with a finite mean, in the units
    the page shows (`factor`: per figure the factor into it; None: all in it already); a missing
    sd read as 0, an n missing or not positive as 1. Runs and keys are numbered as 32-bit integers
    (a million figures: 4 MB a column, not 8), enough for the figures of any page."""
    figure_mean, figure_sd, figure_n = (numbers[c].to_numpy(float) for c in ("mean", "sd", "n"))
    rows = (run >= 0) & (key >= 0) & np.isfinite(figure_mean)
    if not rows.all():  # a copy only where a figure is left out
        run, key = run[rows], key[rows]
        figure_mean, figure_sd, figure_n = figure_mean[rows], figure_sd[rows], figure_n[rows]
        factor = factor[rows] if factor is not None else None
    no_sd = np.isnan(figure_sd)
    mean, sd = figure_mean, np.where(no_sd, 0.0, figure_sd) if no_sd.any() else figure_sd
    if factor is not None:  # a figure printed in several units of one dimension: in the first one
        mean, sd = mean * factor, sd * factor
    counted = (figure_n > 0) & np.isfinite(figure_n)
    n = figure_n if counted.all() else np.where(counted, figure_n, 1)
    return _Figures(run, key, n, mean, sd)


def shown_unit(units: list[str], unit: str) -> tuple[str, float]:
    """The unit the page shows a figure printed in `unit` in, and the factor into it: the first
    of `units` (the figure's units read so far, one per dimension) of its dimension, else `unit`
    itself, added to them. A figure without a unit stays apart (spec.quantities.conversion
    converts)."""
    for other in units:
        if other == unit:
            return unit, 1.0
        if other and unit:
            try:
                return other, conversion(unit, other)
            except UnitMismatch:
                continue
    units.append(unit)
    return unit, 1.0


def load(
    paths: list[str],
    benchmark: str | None = None,
    system: str | None = None,
    whole: set[str] | None = None,
) -> Collection:
    """Every run of the history files (a run in two of them once), optionally one benchmark/system;
    the figures as the page needs them (`Collection.figures`); `whole`: run keys whose figures are
    kept whole (bench report's chosen runs)."""
    out = Collection(list(paths))
    seen: set[str] = set()
    key_index: dict[FigureKey, int] = {}
    parts = []
    for path in paths:
        # a run without a recorded site (older histories) belongs to the file it was read from
        parts.append(
            _add(
                read_history(path),
                out,
                seen,
                os.path.splitext(os.path.basename(path))[0],
                path,
                key_index,
            )
        )
    out.numbers = numbers_frame(
        *(
            np.concatenate([getattr(p, name) for p in parts])
            if len(parts) > 1
            else getattr(parts[0], name)
            for name in NUMBERS
        )
    )
    _filter(out, paths, benchmark, system)
    select(out, whole or set())
    _label_configs(out)
    return out


def _filter(out: Collection, paths: list[str], benchmark: str | None, system: str | None) -> None:
    """Only the runs of `benchmark` and `system` (None: any); a user error when there are none."""
    where = ", ".join(map(redact.url, paths))  # a PostgreSQL URL without its credentials
    if not out.runs:
        raise RunError(
            f"no runs in {where}: the history is empty",
            hint="bench result adds a run to the history; bench import adds another site's export",
        )
    _require(out, where, "benchmark", benchmark)
    _require(out, where, "system", system)
    keep = [r for r in out.runs if _wanted(r.record, benchmark, system)]
    if not keep:
        raise RunError(f"no runs of benchmark '{benchmark}' on system '{system}' in {where}")
    keep_runs(out, keep)
    _label_systems(out)


def _require(out: Collection, where: str, what: str, wanted: str | None) -> None:
    """A user error naming the runs' `what`s (the RunRecord field, `benchmark` or `system`) unless
    `wanted` (None: any) is one of them."""
    if not wanted:
        return
    present = sorted({getattr(r.record, what) for r in out.runs})
    if wanted not in present:
        raise RunError(
            f"no runs of {what} '{wanted}' in {where}", hint=f"{what}s there: {', '.join(present)}"
        )


def _wanted(record: RunRecord, benchmark: str | None, system: str | None) -> bool:
    """Whether a run is of `benchmark` and `system` (None: any)."""
    return (not benchmark or record.benchmark == benchmark) and (
        not system or record.system == system
    )


def _label_systems(out: Collection) -> None:
    """Each run's label as the page names its system: `system`, or `system @ site` with several
    sites."""
    several = len(out.sites) > 1
    for run in out.runs:
        name = run.record.system or "no system"
        run.label = f"{name} @ {run.site}" if several else name


def select(out: Collection, whole: set[str]) -> None:
    """Make `out.figures` from its columns: the history points the page draws (pages.thinning: every
    one of a small history; of a big one a bounded number per series, every series kept), every
    figure of each metric's two latest runs per benchmark and system (the summary's latest and run
    before), of the runs a baseline names and of the runs in `whole`. Regressions are judged on the
    whole history and carried by the figures drawn; `out.run_counts` says how many runs have a
    metric."""
    c, runs = _Figures.of(out), out.runs
    if not len(c.run):
        out.figures = []
        return
    started = np.array([r.record.started or 0 for r in runs], dtype=float)
    run_group, groups = _run_groups(runs)
    keys = _KeyGroups.of(out)
    keep = _drawn(out, c, run_group, keys, started)
    keep |= _two_latest(out, c, run_group, keys, started, groups)
    named = _named_runs(out, whole)
    if len(named):
        keep |= np.isin(c.run, named)
    regressed = out.regressed if out.thinned else None
    out.figures = _figures(out, c, np.flatnonzero(keep), regressed, keys)


def _run_groups(runs: list[Run]) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Per run the number of its (benchmark, system label), and those pairs in number order."""
    groups: dict[tuple[str, str], int] = {}
    run_group = np.array(
        [groups.setdefault((r.record.benchmark, r.label), len(groups)) for r in runs]
    )
    return run_group, list(groups)


@dataclass
class _KeyGroups:
    """Per key of Collection.keys: the number of its metric (`metrics` in order) and of its plot
    line (metric and configuration: pages.figures draws one trace each; `lines` in all), and its
    direction as a sign (_WAYS)."""

    metric: np.ndarray
    line: np.ndarray
    way: np.ndarray
    metrics: list[MetricKey]
    lines: int

    @classmethod
    def of(cls, out: Collection) -> _KeyGroups:
        metrics: dict[MetricKey, int] = {}
        lines: dict[tuple[MetricKey, str], int] = {}
        metric, line = (np.zeros(len(out.keys), dtype=np.int64) for _ in range(2))
        way = np.zeros(len(out.keys), dtype=np.int8)  # per figure: a million of them, 1 MB
        for k, ((tbl, _config, name, unit, direction), (label, row)) in enumerate(
            zip(out.keys, out.parsed, strict=True)
        ):
            key_metric = _metric(tbl, name, unit, _aggregate(row))
            metric[k] = metrics.setdefault(key_metric, len(metrics))
            line[k] = lines.setdefault((key_metric, label), len(lines))
            way[k] = _WAYS.get(direction, 0)
        return cls(metric, line, way, list(metrics), len(lines))


def _aggregate(row: dict[str, str]) -> str:
    """A copies table's aggregate (`sum`, `mean`) of a configuration's row, else ""."""
    copy = row.get(COPY, "")
    return copy if copy in COPY_AGGREGATES else ""


def _drawn(
    out: Collection, c: _Figures, run_group: np.ndarray, keys: _KeyGroups, started: np.ndarray
) -> np.ndarray:
    """Which figures the history plots draw (pages.thinning), each figure's series its run's
    (benchmark, system) group (`run_group` per run) and its plot line (`keys`); sets
    `out.regressed`, judged on the whole series, and `out.thinned`. The figures are put in order by
    series and date once: their series and means in that order (a million figures: 8 MB a column)
    are what thinning needs whole; the regressions take the other columns a slice at a time. The
    figures' series and order are made here, so they go when it returns."""
    series = series_of(run_group, keys.line, keys.lines, c.run, c.key)
    order = _by_series_and_date(series, started, c.run)
    ordered = series[order]
    del series
    regressed_sorted = series_regressions(ordered, order, c.mean, c.sd, c.n, keys.way[c.key])
    per_series = points_per_series(int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1)
    keep = np.zeros(len(order), dtype=bool)
    keep[order] = thin(ordered, c.mean[order], regressed_sorted, per_series)
    out.thinned = not keep.all()
    out.regressed = np.zeros(len(order), dtype=bool)
    out.regressed[order] = regressed_sorted
    return keep


def series_of(
    run_group: np.ndarray, line: np.ndarray, lines: int, run: np.ndarray, key: np.ndarray
) -> np.ndarray:
    """Per figure (its `run` and `key`) the number of its series: its run's group (`run_group` per
    run) times `lines`, plus its key's plot line (`line` per key). As 32-bit integers where every
    number fits: a stable sort of a million of them takes a third of the time of 64-bit ones."""
    groups = int(run_group.max(initial=0)) + 1
    kind = np.int32 if groups * max(1, lines) < 2**31 else np.int64
    group_of: np.ndarray = run_group.astype(kind)[run]
    line_of: np.ndarray = line.astype(kind)[key]
    series: np.ndarray = group_of * kind(max(1, lines)) + line_of
    return series


def _named_runs(out: Collection, whole: set[str]) -> np.ndarray:
    """The indices of the runs whose figures are all kept: those in `whole` and those a baseline
    names, in order."""
    named = whole | set(out.baselines.values())
    return np.array([r.index for r in out.runs if r.record.run_key in named], dtype=np.int64)


def _by_series_and_date(series: np.ndarray, started: np.ndarray, run: np.ndarray) -> np.ndarray:
    """The figures' order by series, then their run's start (`started` per run, `run` per figure),
    figures of one date in the order recorded. One history's figures come in date order
    (history.reader): then one stable sort by series does, half the time of sorting by both."""
    dates = started[run]
    if np.all(dates[1:] >= dates[:-1]):
        return np.argsort(series, kind="stable")
    return np.lexsort((dates, series))


def _two_latest(
    out: Collection,
    c: _Figures,
    run_group: np.ndarray,
    keys: _KeyGroups,
    started: np.ndarray,
    groups: list[tuple[str, str]],
) -> np.ndarray:
    """Which figures belong to one of the two latest runs of their (benchmark, system, metric)
    group (`run_group` per run, `keys` per key; `started` per run), of equal starts the one whose
    figures come later; sets out.run_counts, the runs of each group. Each (group, run) pair is
    numbered by pandas' hash factorize in the order first seen (no sort of the million figures),
    and a figure kept where its pair is."""
    width = len(started) + 1
    pair = (run_group[c.run] * len(keys.metrics) + keys.metric[c.key]) * width + c.run
    codes, unique = pd.factorize(pair)  # pairs in the order their first figure comes
    del pair
    pair_group, pair_run = unique // width, unique % width
    latest_first = np.lexsort((-np.arange(len(unique)), -started[pair_run], pair_group))
    ordered = pair_group[latest_first]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lengths = np.diff(np.r_[starts, len(ordered)])
    rank = np.arange(len(ordered)) - np.repeat(starts, lengths)
    metrics = keys.metrics
    for g, runs_in in zip(ordered[starts].tolist(), lengths.tolist(), strict=True):
        bench, label = groups[g // len(metrics)]
        out.run_counts[(bench, label, metrics[g % len(metrics)])] = runs_in
    chosen = np.zeros(len(unique), dtype=bool)
    chosen[latest_first[rank < 2]] = True
    kept: np.ndarray = chosen[codes]
    return kept


def _figures(
    out: Collection,
    c: _Figures,
    rows: np.ndarray,
    regressed: np.ndarray | None,
    keys: _KeyGroups,
) -> list[Figure]:
    """Figure objects of the chosen rows, in the order they were recorded, each with its key's
    metric (`keys`)."""
    metric_of = [keys.metrics[m] for m in keys.metric.tolist()]
    made = []
    bad = regressed[rows].tolist() if regressed is not None else [None] * len(rows)
    for r, k, n, mean, sd, flag in zip(
        c.run[rows].tolist(),
        c.key[rows].tolist(),
        c.n[rows].tolist(),
        c.mean[rows].tolist(),
        c.sd[rows].tolist(),
        bad,
        strict=True,
    ):
        tbl, _config, name, unit, direction = out.keys[k]
        label, row = out.parsed[k]
        metric = metric_of[k]
        made.append(
            Figure(
                r,
                tbl,
                label,
                row,
                name,
                unit,
                direction,
                int(n),
                mean,
                sd,
                "",
                flag,
                metric[3],
                metric,
            )
        )
    return made


def _label_configs(out: Collection) -> None:
    """Name each configuration by what varies among one system's runs of its benchmark: CARAML's
    tables repeat a dozen columns that are constant (Version) or follow the system (System, Queue),
    which would bury the one that changes (GlobalBatchSize). Decided once per configuration of a
    benchmark and system (a big history's page has fifty thousand figures of a few hundred)."""
    systems = [(r.record.benchmark, r.label) for r in out.runs]
    distinct = {(systems[f.run], f.config): f.row for f in out.figures}
    varying = _varying(_values(distinct))
    labels = {
        (bench, config): _by_varying(row, varying[bench])
        for ((bench, _label), config), row in distinct.items()
    }
    for f in out.figures:
        f.label = labels[(systems[f.run][0], f.config)]


def _by_varying(row: dict[str, str], varying: list[str]) -> str:
    """A configuration by the parameters that vary: `k=v,k=v` in the row's order."""
    return ",".join(f"{k}={row[k]}" for k in row if k in varying)


System = tuple[str, str]  # a benchmark and a system label
Parameters = dict[str, set[str]]  # a parameter's values


def _values(distinct: dict[tuple[System, str], dict[str, str]]) -> dict[System, Parameters]:
    """Per benchmark and system the values each parameter takes in its configurations."""
    values: dict[System, Parameters] = {}
    for (system, _config), row in distinct.items():
        per = values.setdefault(system, {})
        for k, v in row.items():
            per.setdefault(k, set()).add(v)
    return values


def _varying(values: dict[System, Parameters]) -> dict[str, list[str]]:
    """Per benchmark the parameters that vary among one of its systems' configurations, in the
    order first seen."""
    varying: dict[str, list[str]] = {}
    for (bench, _label), per in values.items():
        names = varying.setdefault(bench, [])
        names.extend(k for k, v in per.items() if len(v) > 1 and k not in names)
    return varying


def keep_runs(collection: Collection, keep: list[Run]) -> None:
    """Only the runs in `keep` (and their figures), renumbered in order."""
    remap = {r.index: i for i, r in enumerate(keep)}
    _keep_numbers(collection, remap)
    for i, run in enumerate(keep):
        run.index = i
    collection.runs = keep
    collection.figures = [f for f in collection.figures if f.run in remap]
    for f in collection.figures:
        f.run = remap[f.run]


def _keep_numbers(collection: Collection, remap: dict[int, int]) -> None:
    """Only the numbers (and regression flags) of the runs in `remap`, their runs renumbered by
    it."""
    number = np.full(len(collection.runs) + 1, -1, dtype=np.int32)
    for old, new_index in remap.items():
        number[old] = new_index
    new = number[collection.numbers["run"].to_numpy()]
    if len(collection.regressed) == len(new):
        collection.regressed = collection.regressed[new >= 0]
    kept = collection.numbers[new >= 0].reset_index(drop=True)
    kept["run"] = new[new >= 0]
    collection.numbers = kept
