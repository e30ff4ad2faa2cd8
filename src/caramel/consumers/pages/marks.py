"""Change points on the dashboard: every history plot's series judged by consumers/history/changes
on all its figures in date order (Collection.numbers, never the thinned points a plot draws), the
first run after each change marked, with its likely causes from the runs' provenance and fingerprint
(changes_read.provenance), and the change points of several series at one moment grouped into
events for the page's panel: changes.find, as `bench history changes` finds them.

A series here is what a history plot draws as one line: a benchmark's metric (pages.sources.Figure.
metric) of one configuration on one system label; its figures in the order of their runs' start.
Figures that are not positive are left out, as `bench history changes` leaves them out."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from caramel.consumers.history import changes
from caramel.consumers.history.changes import ChangePoint, Event
from caramel.consumers.history.changes_read import PROVENANCE_COLUMNS, provenance
from caramel.consumers.pages.sources import COPY, Collection, _metric, series_of
from caramel.vocabulary import COPY_AGGREGATES, Direction

SeriesKey = tuple[str, str, tuple[str, str, str, str], str]  # benchmark, label, metric, config


@dataclass
class Marks:
    by_series: dict[SeriesKey, list[ChangePoint]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    run_index: dict[str, int] = field(default_factory=dict)  # run key -> index into coll.runs
    judged: int = 0  # series with at least changes.MIN_RUNS runs
    short: int = 0  # series with fewer
    # (a change point's series, its index) -> the figure of its first run after: where it is drawn
    at: dict[tuple[tuple[str, ...], int], float] = field(default_factory=dict)
    # each list of causes drawn, once: its index in the page's `causes` (an update moves thousands
    # of series, each change point naming the same causes)
    cause_lists: dict[tuple[str, ...], int] = field(default_factory=dict)


def _when(started: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(started or 0))


def _run_provenance(coll: Collection) -> dict[str, dict[str, object]]:
    """Each run's items that can explain a change (changes_read.provenance of its record)."""
    out = {}
    for run in coll.runs:
        fields: dict[str, object] = {c: getattr(run.record, c, "") for c in PROVENANCE_COLUMNS}
        fields["fingerprint"] = json.dumps(run.record.fingerprint or {})
        out[run.record.run_key] = provenance(fields)
    return out


def _key_series(
    coll: Collection,
) -> tuple[list[tuple[tuple[str, str, str, str], str]], list[Direction]]:
    """Per key of coll.keys: the plot line it is on (metric, configuration) and its direction."""
    lines, ways = [], []
    for k, (tbl, _config, name, unit, direction) in enumerate(coll.keys):
        label, row = coll.parsed[k]
        aggregate = row.get(COPY, "") if row.get(COPY) in COPY_AGGREGATES else ""
        lines.append((_metric(tbl, name, unit, aggregate), label))
        ways.append(Direction(direction or "unknown"))  # once per key, not per series
    return lines, ways


def find(coll: Collection) -> Marks:
    """The change points of every series of `coll` (all its figures) and their events
    (changes.find over the runs in start order: the history's)."""
    out = Marks(run_index={r.record.run_key: r.index for r in coll.runs})
    in_time = np.argsort([r.record.started or 0 for r in coll.runs], kind="stable")
    judged, owner = _judged_series(coll, in_time, out)
    if not judged:
        return out
    runs = [coll.runs[i].record for i in in_time]
    found, out.events = changes.find(
        judged, [r.run_key for r in runs], [_when(r.started) for r in runs], _run_provenance(coll)
    )
    values = {one.label: one.values for one in judged}
    by_series: dict[SeriesKey, list[ChangePoint]] = defaultdict(list)
    for change in found:
        by_series[owner[change.series]].append(change)
        out.at[(change.series, change.index)] = float(values[change.series][change.index])
    out.by_series = dict(by_series)
    return out


def _judged_series(
    coll: Collection, in_time: np.ndarray, out: Marks
) -> tuple[list[changes.Series], dict[tuple[str, ...], SeriesKey]]:
    """The series of `coll` long enough to judge (counted in `out`: judged and short), each with
    its positive figures in the order of their runs' start (`in_time`: the runs in that order), and
    the plot line each belongs to by its name. The figures' indices made to find them are a million
    numbers each: they go when this returns, before the series are judged."""
    mean = coll.numbers["mean"].to_numpy(float)
    positive = mean > 0
    run, key = (coll.numbers[name].to_numpy() for name in ("run", "key"))
    if not positive.all():  # only then a copy of the columns: most histories' figures all are
        rows = np.flatnonzero(positive)
        mean, run, key = mean[rows], run[rows], key[rows]
    if not len(mean):
        return [], {}
    lines, ways = _key_series(coll)
    line_ids: dict[tuple[tuple[str, str, str, str], str], int] = {}
    key_line = np.array([line_ids.setdefault(line, len(line_ids)) for line in lines], np.int64)
    groups: dict[tuple[str, str], int] = {}
    run_group = np.array(
        [groups.setdefault((r.record.benchmark, r.label), len(groups)) for r in coll.runs]
    )
    position = np.empty(len(in_time), dtype=np.int32)  # a run's place in time, 4 MB a column
    position[in_time] = np.arange(len(in_time))
    series = series_of(run_group, key_line, len(line_ids), run, key)
    when = position[run]
    order = _by_series_and_time(series, when)
    judged: list[changes.Series] = []
    owner: dict[tuple[str, ...], SeriesKey] = {}
    names = list(groups)
    for part in np.split(order, np.flatnonzero(np.diff(series[order])) + 1):
        if len(part) < changes.MIN_RUNS:
            out.short += 1
            continue
        out.judged += 1
        first = part[0]
        bench, label = names[run_group[run[first]]]
        metric, config = lines[key[first]]
        name = (bench, label, config, _figure(metric))
        owner[name] = (bench, label, metric, config)
        judged.append(changes.Series(name, mean[part], when[part], metric[2], ways[key[first]]))
    return judged, owner


def _by_series_and_time(series: np.ndarray, when: np.ndarray) -> np.ndarray:
    """The figures' order by series, then their run's place in time (`when`), figures of one run in
    the order recorded. A history's figures come in the order of their runs' start (history.reader):
    then one stable sort by series does (a million figures: half the time, and no third key)."""
    if np.all(when[1:] >= when[:-1]):
        return np.argsort(series, kind="stable")
    return np.lexsort((when, series))  # stable: ties keep the order recorded


def _figure(metric: tuple[str, str, str, str]) -> str:
    """A metric as `bench history changes` names a figure (table/name), its unit and aggregate."""
    tbl, name, unit, aggregate = metric
    return (
        f"{tbl}/{name}" + (f" [{unit}]" if unit else "") + (f" · {aggregate}" if aggregate else "")
    )


def drawn(marks: Marks, key: SeriesKey) -> list[dict[str, object]]:
    """A plot line's change points as the page's script draws them: at the first run after (index
    into the page's runs) and its figure, with what the hover says (its causes: an index into
    the page's `causes`, causes_json)."""
    return [
        {
            "run": marks.run_index[c.run_after],
            "before": marks.run_index[c.run_before],
            "y": float(f"{marks.at[(c.series, c.index)]:.6g}"),
            "kind": c.kind.value,
            "ratio": round(c.ratio, 6),
            "low": round(c.low, 6),
            "high": round(c.high, 6),
            "p": float(f"{c.p_value:.2g}"),
            "causes": marks.cause_lists.setdefault(c.causes, len(marks.cause_lists)),
        }
        for c in marks.by_series.get(key, [])
    ]


def causes_json(marks: Marks) -> list[list[str]]:
    """The lists of causes the drawn change points name (drawn), in the order of their index."""
    return [list(causes) for causes in marks.cause_lists]


@dataclass(frozen=True)
class EventRow:
    """An event as the page's panel lists it."""

    when: str  # the first run after's start, UTC
    run: str
    causes: tuple[str, ...]
    series: int
    benchmarks: int
    kinds: str
    low: float  # the smallest and largest change in %, signed
    high: float
    bench: str = ""  # its one benchmark, for the page's filter ("" when several)
    group: str = ""  # its one system label ("" when several)


def event_rows(marks: Marks) -> list[EventRow]:
    """The events newest first, and at one moment the largest first."""
    rows = []
    for e in marks.events:
        sizes = sorted((c.ratio - 1) * 100 for c in e.changes)
        rows.append(
            EventRow(
                e.time_after,
                e.run_after,
                e.causes,
                len(e.changes),
                len({c.series[0] for c in e.changes}),
                "/".join(sorted({c.kind.value for c in e.changes})),
                sizes[0],
                sizes[-1],
                *(_one({c.series[k] for c in e.changes}) for k in (0, 1)),
            )
        )
    return sorted(rows, key=lambda r: (r.when, max(abs(r.low), abs(r.high))), reverse=True)


def _one(names: set[str]) -> str:
    return next(iter(names)) if len(names) == 1 else ""
