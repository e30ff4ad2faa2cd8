"""Reading a history file read-only, checked: what pages (the dashboard, the report) draw from.

A file that is missing, not SQLite, of another caramel's layout or locked is a user error naming
the file (exit 2). The history's SQL lives here and in history.store, nowhere else.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from caramel.consumers.history.engine import PostgresConnection, is_url
from caramel.consumers.history.store import SCHEMA_VERSION, History, RunRecord, decode_run
from caramel.errors import RunError

_RUN_COLUMNS = {"run_key", "benchmark", "tags", "system", "started", "job_ids", "nodes", "container", "git_commit"}
_METRIC_COLUMNS = {"run_key", "tbl", "config", "name", "unit", "direction", "n", "mean", "sd"}
LOCK_WAIT_S = 3.0  # a `bench result` writing holds the lock for well under a second

# run_key, tbl, config (JSON), name, unit, direction, n, mean, sd
FigureRow = tuple[str, str, str, str, str, str, int, float, float]
# tbl, config (JSON), name, unit, direction: what one figure is, in every run that has it
FigureKey = tuple[str, str, str, str, str]


@dataclass
class FigureColumns:
    """Every figure of a history as columns (a million figures in 30 MB): the run (index into
    HistoryContents.runs), the key (index into `keys`, in the order first recorded), and the n,
    mean and sd of its repeats (NaN where none is stored). In the order the figures were recorded."""

    keys: list[FigureKey] = field(default_factory=list)
    run: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    key: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sd: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class HistoryContents:
    """Everything a page needs of one history file, in the order it was recorded."""

    runs: list[RunRecord] = field(default_factory=list)  # by start time
    columns: FigureColumns = field(default_factory=FigureColumns)
    baselines: list[tuple[str, str]] = field(default_factory=list)  # (name, run key)

    @property
    def figures(self) -> list[FigureRow]:
        """The figures as rows (a small history's view; pages read `columns`)."""
        c = self.columns
        return [(self.runs[r].run_key, *c.keys[k], int(n), float(mean), float(sd))
                for r, k, n, mean, sd in zip(c.run.tolist(), c.key.tolist(), c.n.tolist(), c.mean.tolist(),
                                             c.sd.tolist(), strict=True)]


def _columns(runs: list[RunRecord], execute: Callable[[str, tuple], Any], dialect: str) -> FigureColumns:
    """The figures of each run as columns, two queries a run: its keys as one text (SQL joins them;
    runs of one benchmark repeat the same keys in the same order, so the text is split and looked up
    only when it changes) and its numbers (n, mean, sd), which numpy takes whole. A thousand runs of
    a thousand figures are read in a second or two, without an object per figure."""
    order, joined, numbers = _SQL[dialect]
    keys: dict[str, int] = {}
    key_list: list[FigureKey] = []
    parts: list[tuple[int, np.ndarray, np.ndarray]] = []
    last_text, last_ids = None, np.zeros(0, dtype=np.int32)
    for index, run in enumerate(runs):
        text = execute(joined, (run.run_key,)).fetchone()[0]
        if not text:
            continue
        values = np.array(execute(numbers, (run.run_key,)).fetchall(), dtype=float).reshape(-1, 3)
        if text != last_text:
            ids = []
            for key in text.split(_ROW):
                found = keys.get(key)
                if found is None:
                    found = keys[key] = len(key_list)
                    key_list.append(tuple(key.split(_FIELD)))
                ids.append(found)
            last_text, last_ids = text, np.array(ids, dtype=np.int32)
        if len(last_ids) != len(values) or any(len(key_list[k]) != 5 for k in set(last_ids.tolist())):
            raise RunError(f"run {run.run_key}: a figure's table, configuration, name or unit holds a control "
                           "character caramel never writes", hint=f"bench history remove {run.run_key} drops that run")
        parts.append((index, last_ids, values))
    if not parts:
        return FigureColumns(key_list)
    values = np.concatenate([p[2] for p in parts])
    return FigureColumns(key_list, np.concatenate([np.full(len(p[1]), p[0], dtype=np.int32) for p in parts]),
                         np.concatenate([p[1] for p in parts]), values[:, 0], values[:, 1], values[:, 2])


_FIELD, _ROW = "\x1f", "\x1e"  # unit and record separators: escaped in JSON, in no name caramel writes
_KEY_TEXT = "coalesce(tbl, '') || char(31) || coalesce(config, '') || char(31) || coalesce(name, '') || char(31) || " \
            "coalesce(unit, '') || char(31) || coalesce(direction, '')"
# per dialect: the insertion order, a run's keys as one text, a run's numbers (a missing mean: not finite,
# left out by the pages; a text where a number belongs, from a damaged row: likewise)
_SQL = {
    "sqlite": ("rowid",
               f"SELECT group_concat(k, char(30)) FROM (SELECT {_KEY_TEXT} AS k FROM metrics WHERE run_key = ? "
               "ORDER BY rowid)",
               "SELECT CASE WHEN typeof(n) = 'integer' AND n > 0 THEN n ELSE 1 END, "
               "CASE WHEN typeof(mean) IN ('real', 'integer') THEN mean ELSE 1e999 END, "
               "CASE WHEN typeof(sd) IN ('real', 'integer') THEN sd ELSE 0.0 END "
               "FROM metrics WHERE run_key = ? ORDER BY rowid"),
    "postgresql": ("seq",
                   f"SELECT string_agg({_KEY_TEXT.replace('char(31)', 'chr(31)')}, chr(30) ORDER BY seq) "
                   "FROM metrics WHERE run_key = %s",
                   "SELECT CASE WHEN n > 0 THEN n ELSE 1 END, coalesce(mean, 'Infinity'), coalesce(sd, 0) "
                   "FROM metrics WHERE run_key = %s ORDER BY seq"),
}


def read_history(path: str) -> HistoryContents:
    """The runs, figures and baselines of the history file at `path`, opened read-only (or of the
    PostgreSQL history at a URL: history.engine)."""
    if is_url(path):
        return _read_server(path)
    _check_file(path)
    try:
        db = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True, timeout=LOCK_WAIT_S)
        try:
            _check_layout(path, db)
            runs = _runs(path, db)
            return HistoryContents(runs, _columns(runs, db.execute, "sqlite"),
                                   list(db.execute("SELECT name, run_key FROM baselines")))
        finally:
            db.close()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise RunError(f"{path}: the history is locked by another process (a bench result or import "
                           f"writing to it) for more than {LOCK_WAIT_S:g} s", hint="try again when it is done") from None
        raise RunError(f"{path}: cannot read the history: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise RunError(f"{path}: not a caramel history ({exc})") from None


def _read_server(url: str) -> HistoryContents:
    with History(url) as history:
        db = history.db
        runs = history.runs()
        assert isinstance(db, PostgresConnection)
        raw = db.db  # psycopg's connection: the SQL of _SQL is PostgreSQL's own
        return HistoryContents(runs, _columns(runs, lambda sql, params: raw.execute(sql, params), "postgresql"),
                               [tuple(row) for row in db.execute("SELECT name, run_key FROM baselines").fetchall()])


def _runs(path: str, db: sqlite3.Connection) -> list[RunRecord]:
    cursor = db.execute("SELECT * FROM runs ORDER BY started")
    names = [d[0] for d in cursor.description]
    return [decode_run(path, dict(zip(names, row, strict=True))) for row in cursor]


def _check_file(path: str) -> None:
    if not os.path.isfile(path):
        raise RunError(f"{path}: no such history file", hint="give --history FILE, or set $CARAMEL_HISTORY")
    with open(path, "rb") as handle:
        head = handle.read(16)
    if not head:
        raise RunError(f"{path}: an empty file, not a caramel history",
                       hint="a history is made by bench result (or bench import)")
    if head != b"SQLite format 3\x00":
        raise RunError(f"{path}: not a caramel history (not an SQLite database)",
                       hint="a history is made by bench result (or bench import); an export is read by bench import")


def _table_columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _check_layout(path: str, db: sqlite3.Connection) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not {"runs", "metrics"} <= tables:
        raise RunError(f"{path}: an SQLite database, but not a caramel history (no runs and metrics tables)")
    if "meta" in tables:
        found = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if found and str(found[0]).isdigit() and int(found[0]) > SCHEMA_VERSION:
            raise RunError(f"{path}: a history of a newer caramel (layout {found[0]}; this caramel reads up to "
                           f"{SCHEMA_VERSION})", hint="build the page with the caramel that wrote the history")
    missing = sorted(_RUN_COLUMNS - _table_columns(db, "runs")) + sorted(_METRIC_COLUMNS - _table_columns(db, "metrics"))
    if missing:
        raise RunError(f"{path}: a history of another caramel version (missing columns {', '.join(missing)})",
                       hint="export it with that caramel (bench export) and import it here")
