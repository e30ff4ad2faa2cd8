"""`bench history changes`' reading: every series' figures in one query of the history (run, time,
series, estimate), the runs' provenance, the change points and events of consumers/history/changes,
and what a CI asks of them (regressions since a run or a date)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from caramel.consumers.history.changes import ChangeKind, ChangePoint, Event
from caramel.consumers.history.layout import A_FIGURE

# the run's own items that can explain a change (besides its fingerprint's): who ran what where
PROVENANCE_COLUMNS = ("caramel_version", "git_commit", "container", "system", "nodes", "host")
FIGURES_SQL = (
    "SELECT runs.run_key AS run, runs.started AS time, series.benchmark AS benchmark, "
    "series.system AS system, series.config AS configuration, series.tbl AS tbl, "
    "series.name AS name, series.unit AS unit, series.direction AS direction, "
    "figures.mean AS estimate "
    "FROM figures JOIN runs ON runs.id = figures.run JOIN series ON series.id = figures.series "
    "WHERE " + A_FIGURE  # a failed row's reason is no figure
)


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


def read(db: Any, benchmark: str = "", system: str = "", figure: str = "") -> Found:
    """The change points and events of every series of the history (narrowed by benchmark,
    system, figure name), in one query of its figures and one of its runs."""
    from caramel.consumers.history import query as query  # noqa: PLC0414
    from caramel.consumers.history.changes import frame_changes, group_events

    where, params = [], []
    for column, value in (("series.benchmark", benchmark), ("series.system", system)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if figure:
        where.append("series.name = ?")
        params.append(figure)
    sql = FIGURES_SQL + (" AND " + " AND ".join(where) if where else "")
    figures = query.frame(db, sql, params)
    runs = query.runs(db)
    order = [str(r["run_key"]) for r in runs]
    started = {str(r["run_key"]): float(r.get("started") or 0.0) for r in runs}
    if figures.empty:
        return Found([], [], [], order, started)
    figures["figure"] = figures["tbl"].astype(str) + "/" + figures["name"].astype(str)
    figures = figures[query.plain_numbers(figures["estimate"]).gt(0)]
    figures["estimate"] = query.plain_numbers(figures["estimate"])
    changes, short = frame_changes(figures, {str(r["run_key"]): provenance(r) for r in runs})
    events = group_events(changes, {key: i for i, key in enumerate(order)})
    return Found(changes, events, short, order, started)


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
