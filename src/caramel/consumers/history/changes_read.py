"""`bench history changes`' reading: every series' figures in one query of the history (run, time,
series, estimate), the runs' provenance, the change points and events of consumers/history/changes,
and what a CI asks of them (regressions since a run or a date)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from caramel.consumers.history.changes import MIN_RUNS, ChangeKind, ChangePoint, Event, Series
from caramel.consumers.history.layout import A_FIGURE
from caramel.vocabulary import Direction

if TYPE_CHECKING:
    import pandas as pd

# the run's own items that can explain a change (besides its fingerprint's): who ran what where
PROVENANCE_COLUMNS = ("caramel_version", "git_commit", "container", "system", "nodes", "host")


@dataclass(frozen=True)
class Found:
    changes: list[ChangePoint]
    events: list[Event]
    short: list[tuple[str, ...]]  # series with too few runs to judge
    runs: list[str]  # run keys in time order
    started: dict[str, float]  # run key -> its start (epoch seconds)


def _flat(prefix: str, value: Any, out: dict[str, object]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), item, out)
    elif isinstance(value, list):
        out[prefix] = ", ".join(map(str, value))
    elif value not in (None, ""):
        out[prefix] = value


def provenance(run: Mapping[str, Any]) -> dict[str, object]:
    """A run's items that can explain a change: its provenance columns, and its fingerprint's
    items flattened (`gpu.driver`, `cuda`, `kernel`, `modules`...)."""
    out: dict[str, object] = {}
    for column in PROVENANCE_COLUMNS:
        if run.get(column) not in (None, ""):
            out[column] = run[column]
    try:
        fingerprint = json.loads(run.get("fingerprint") or "{}")
    except ValueError:
        fingerprint = {}
    _flat("", fingerprint if isinstance(fingerprint, dict) else {}, out)
    return out


SERIES_SQL = "SELECT id, benchmark, system, tbl, config, name, unit, direction FROM series"
NUMBERS_SQL = "SELECT run, series, mean FROM figures WHERE " + A_FIGURE  # a reason is no figure


def read(
    db: Any, benchmark: str = "", system: str = "", figure: str = "", threshold: float | None = None
) -> Found:
    """The change points and events of every series of the history (narrowed by benchmark,
    system, figure name): the series (a few thousand rows) and every figure as three numbers (its
    run's id, its series' id, its mean) in two queries, grouped by numpy; the runs as rows; the
    change points by changes.find (`threshold`: its band of no change in %, else bench compare's
    default)."""
    from caramel.consumers.history import query as query  # noqa: PLC0414
    from caramel.consumers.history.changes import find

    runs = sorted(query.runs(db), key=lambda r: (float(r.get("started") or 0.0), int(r["id"])))
    order = [str(r["run_key"]) for r in runs]
    started = {str(r["run_key"]): float(r.get("started") or 0.0) for r in runs}
    series = query.frame(db, SERIES_SQL)
    for column, value in (("benchmark", benchmark), ("system", system), ("name", figure)):
        if value:
            series = series[series[column] == value]
    numbers = query.frame(db, NUMBERS_SQL)
    if series.empty or numbers.empty or not runs:
        return Found([], [], [], order, started)
    judged, short = _series(series, numbers, [int(r["id"]) for r in runs])
    times = [_iso(started[k]) for k in order]
    items = {str(r["run_key"]): provenance(r) for r in runs}
    band = {} if threshold is None else {"threshold": threshold}
    changes, events = find(judged, order, times, items, **band)
    return Found(changes, events, short, order, started)


def _series(
    series: pd.DataFrame, numbers: pd.DataFrame, run_ids: list[int]
) -> tuple[list[Series], list[tuple[str, ...]]]:
    """The history's figures (`numbers`: run id, series id, mean) as series of `series` (the
    rows kept), each in the order of its runs (`run_ids` in time order), positive figures only;
    and the series of fewer than MIN_RUNS runs, too few to judge."""
    from caramel.consumers.history import query as query  # noqa: PLC0414

    position = np.full(max(run_ids) + 1, -1)
    position[run_ids] = np.arange(len(run_ids))
    runs_of = numbers["run"].to_numpy(dtype=np.int64)
    series_ids = numbers["series"].to_numpy(dtype=np.int64)
    values = query.plain_numbers(numbers["mean"]).to_numpy(dtype=float)
    known = (runs_of < len(position)) & np.isin(series_ids, series["id"].to_numpy())
    at = np.where(known, position[np.minimum(runs_of, len(position) - 1)], -1)
    keep = known & (at >= 0) & (values > 0)
    at, series_ids, values = at[keep], series_ids[keep], values[keep]
    ranked = np.lexsort((at, series_ids))
    at, series_ids, values = at[ranked], series_ids[ranked], values[ranked]
    starts = np.flatnonzero(np.diff(series_ids, prepend=-1)).tolist()
    by_id = series.set_index("id")
    judged: list[Series] = []
    short: list[tuple[str, ...]] = []
    for first, last in zip(starts, [*starts[1:], len(series_ids)], strict=True):
        row = by_id.loc[int(series_ids[first])]
        label = _label(row)
        if last - first < MIN_RUNS:
            short.append(label)
            continue
        direction = Direction(str(row["direction"]) or "unknown")
        judged.append(
            Series(label, values[first:last], at[first:last], str(row["unit"]), direction)
        )
    return judged, short


def _label(row: pd.Series) -> tuple[str, ...]:
    """A series' name: benchmark, system, configuration, table/figure."""
    return (
        str(row["benchmark"]), str(row["system"]), str(row["config"]),
        f"{row['tbl']}/{row['name']}",
    )  # fmt: skip


def _iso(epoch: float) -> str:
    """A run's start as ISO 8601 in UTC (its time in the JSON and the sinks' documents)."""
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


def since_run(found: Found, since: str) -> float:
    """The start time from which a change counts as new: `last` (the newest run), a run key, or a
    date (ISO 8601); 0 for none."""
    if not since:
        return 0.0
    if since == "last":
        return found.started.get(found.runs[-1], 0.0) if found.runs else 0.0
    if since in found.started:
        return found.started[since]
    try:
        when = datetime.fromisoformat(since)
    except ValueError:
        raise ValueError(
            f"--since {since!r}: expected last, a run key (bench history list) or a date "
            "(2026-11-28 or 2026-11-28T10:00)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def failing(found: Found, since: float, fail_on: str) -> list[ChangePoint]:
    """The changes a CI fails on: regressions (`regression`) or any change (`any`) whose first run
    after started at or after `since`."""
    kinds = {ChangeKind.REGRESSION} if fail_on == "regression" else set(ChangeKind)
    return [
        c for c in found.changes if c.kind in kinds and found.started.get(c.run_after, 0) >= since
    ]


def documents(found: Found, site: str = "") -> list[dict[str, object]]:
    """The events as documents for the sinks (one each, its changes inside)."""
    return [
        {
            "kind": "change_event",
            "site": site,
            "time_after": e.time_after,
            "run_after": e.run_after,
            "causes": list(e.causes),
            "summary": e.describe(),
            "changes": [as_json(c) for c in e.changes],
        }
        for e in found.events
    ]


def as_json(change: ChangePoint) -> dict[str, object]:
    return {
        "series": list(change.series),
        "unit": change.unit,
        "direction": change.direction.value,
        "kind": change.kind.value,
        "ratio": change.ratio,
        "interval": [change.low, change.high],
        "p_value": change.p_value,
        "run_before": change.run_before,
        "run_after": change.run_after,
        "time_after": change.time_after,
        "causes": list(change.causes),
    }


def series_label(series: Sequence[str]) -> str:
    return " / ".join(series)
