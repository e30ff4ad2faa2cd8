"""Reading a history file read-only, checked: what pages (the dashboard, the report) draw from.

A file that is missing, not SQLite, of another caramel's layout or locked is a user error naming
the file (exit 2). The history's SQL lives here and in history.store, nowhere else.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

from caramel.errors import RunError
from caramel.history.engine import is_url
from caramel.history.store import SCHEMA_VERSION, History, RunRecord, decode_run

_RUN_COLUMNS = {"run_key", "benchmark", "tags", "system", "started", "job_ids", "nodes", "container", "git_commit"}
_METRIC_COLUMNS = {"run_key", "tbl", "config", "name", "unit", "direction", "n", "mean", "sd"}
LOCK_WAIT_S = 3.0  # a `bench result` writing holds the lock for well under a second

# run_key, tbl, config (JSON), name, unit, direction, n, mean, sd
FigureRow = tuple[str, str, str, str, str, str, int, float, float]


@dataclass
class HistoryContents:
    """Everything a page needs of one history file, in the order it was recorded."""

    runs: list[RunRecord] = field(default_factory=list)  # by start time
    figures: list[FigureRow] = field(default_factory=list)
    baselines: list[tuple[str, str]] = field(default_factory=list)  # (name, run key)


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
            return HistoryContents(_runs(path, db), list(db.execute(
                "SELECT run_key, tbl, config, name, unit, direction, n, mean, sd FROM metrics ORDER BY rowid")),
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
        return HistoryContents(history.runs(), [tuple(row) for row in db.execute(
            "SELECT run_key, tbl, config, name, unit, direction, n, mean, sd FROM metrics "
            f"ORDER BY {db.dialect.order}").fetchall()],
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


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
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
    missing = sorted(_RUN_COLUMNS - _columns(db, "runs")) + sorted(_METRIC_COLUMNS - _columns(db, "metrics"))
    if missing:
        raise RunError(f"{path}: a history of another caramel version (missing columns {', '.join(missing)})",
                       hint="export it with that caramel (bench export) and import it here")
