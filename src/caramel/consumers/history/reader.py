"""Reading a history file read-only, checked: what pages (the dashboard, the report) draw from.

A file that is missing, not SQLite, of another caramel's layout or locked is a user error naming
the file (exit 2). The history's SQL lives here, in history.grouped (the fast read this module
tries first) and in history.store, nowhere else.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from caramel.consumers.history.columns import CHUNK_ROWS, FIELD, FigureColumns, chunks, in_run_order
from caramel.consumers.history.engine import PostgresConnection, is_url
from caramel.consumers.history.grouped import Irregular, grouped_columns
from caramel.consumers.history.store import SCHEMA_VERSION, History, RunRecord, decode_run
from caramel.errors import RunError
from caramel.stages.state import sqlitefiles

_RUN_COLUMNS = {
    "run_key",
    "benchmark",
    "tags",
    "system",
    "started",
    "job_ids",
    "nodes",
    "container",
    "git_commit",
}
_METRIC_COLUMNS = {"run_key", "tbl", "config", "name", "unit", "direction", "n", "mean", "sd"}
LOCK_WAIT_S = 3.0  # a `bench result` writing holds the lock for well under a second

# run_key, tbl, config (JSON), name, unit, direction, n, mean, sd
FigureRow = tuple[str, str, str, str, str, str, int, float, float]


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
        return [
            (self.runs[r].run_key, *c.keys[k], int(n), float(mean), float(sd))
            for r, k, n, mean, sd in zip(
                c.run.tolist(),
                c.key.tolist(),
                c.n.tolist(),
                c.mean.tolist(),
                c.sd.tolist(),
                strict=True,
            )
        ]


def _columns(runs: list[RunRecord], fetched: Iterable[list[tuple]]) -> FigureColumns:
    """The figures of `runs` as columns, from ONE scan of the metrics table in the order the rows
    were written (`_SCAN`: each row's run key, its key as one text, n, mean and sd), read a few
    thousand rows at a time: a sequential read of the table, where a query per run (as before)
    looked every row up through the key index, three times as long. A key text is looked up in a
    dict (the same few thousand recur in every run); the numbers go to numpy by the chunk. The
    figures are then put in the order of `runs` (by start time; within a run, as written) and the
    keys numbered in the order they first appear there: the columns a query per run gave. Rows of no
    run in `runs` are left out. A million figures in a second or two and 30 MB, without an object
    per figure."""
    run_index = {run.run_key: index for index, run in enumerate(runs)}
    key_ids: dict[str, int] = {}
    run_parts: list[np.ndarray] = []
    key_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    for chunk in fetched:
        # the chunk as one object array (a C loop; transposing its tuples with zip took twice as
        # long), its texts looked up by map over a dict's get: never a Python step per figure
        rows = np.array(chunk, dtype=object)
        ids = np.fromiter(map(key_ids.get, rows[:, 1], repeat(-1)), dtype=np.int32, count=len(rows))
        if ids.min() < 0:  # keys not seen before: numbered in the order they come
            known = len(key_ids)
            texts = rows[:, 1].tolist()
            for text in texts:
                key_ids.setdefault(text, len(key_ids))
            _check_keys(list(key_ids)[known:], texts, rows[:, 0].tolist())
            ids = np.fromiter(map(key_ids.__getitem__, texts), dtype=np.int32, count=len(rows))
        run_parts.append(
            np.fromiter(map(run_index.get, rows[:, 0], repeat(-1)), dtype=np.int32, count=len(rows))
        )
        key_parts.append(ids)
        value_parts.append(rows[:, 2:].astype(float).T)
    if not run_parts:
        return FigureColumns()
    run, key, values = (
        np.concatenate(run_parts),
        np.concatenate(key_parts),
        np.concatenate(value_parts, axis=1),
    )
    del run_parts, key_parts, value_parts  # the chunks' copies, before the reordered ones are made
    return in_run_order([tuple(text.split(FIELD)) for text in key_ids], run, key, values)


def _check_keys(new: list[str], texts: list[str], run_keys: list[str]) -> None:
    """A key text of other than five fields: a control character in a name, which caramel never
    writes."""
    for text in new:
        if text.count(FIELD) != 4:
            run_key = run_keys[texts.index(text)]
            raise RunError(
                f"run {run_key}: a figure's table, configuration, name or unit holds a control "
                "character caramel never writes",
                hint=f"bench history remove {run_key} drops that run",
            )


_KEY_TEXT = (
    "coalesce(tbl, '') || char(31) || coalesce(config, '') || char(31) || coalesce(name, '') || char(31) || "
    "coalesce(unit, '') || char(31) || coalesce(direction, '')"
)
# per dialect, every figure in the order written: its run, its key as one text, its numbers (a
# missing mean: not finite, left out by the pages; a text where a number belongs, from a damaged
# row: likewise)
_SCAN = {
    "sqlite": f"SELECT run_key, {_KEY_TEXT}, CASE WHEN typeof(n) = 'integer' AND n > 0 THEN n ELSE 1 END, "
    "CASE WHEN typeof(mean) IN ('real', 'integer') THEN mean ELSE 1e999 END, "
    "CASE WHEN typeof(sd) IN ('real', 'integer') THEN sd ELSE 0.0 END FROM metrics ORDER BY rowid",
    "postgresql": f"SELECT run_key, {_KEY_TEXT.replace('char(31)', 'chr(31)')}, CASE WHEN n > 0 THEN n ELSE 1 END, "
    "coalesce(mean, 'Infinity'), coalesce(sd, 0) FROM metrics ORDER BY seq",
}


def read_history(path: str) -> HistoryContents:
    """The runs, figures and baselines of the history file at `path`, opened read-only (or of the
    PostgreSQL history at a URL: history.engine)."""
    if is_url(path):
        return _read_server(path)
    _check_file(path)
    try:
        history = sqlitefiles.FileKind("history", timeout_s=LOCK_WAIT_S)
        db = sqlitefiles.open_connection(path, history, readonly=True)
        try:
            _check_layout(path, db)
            db.execute("BEGIN")  # one snapshot for the reads below: a writer waits or is not seen
            runs = _runs(path, db)
            try:
                columns = grouped_columns(db, runs)
            except Irregular:
                columns = _columns(runs, chunks(db.execute(_SCAN["sqlite"])))
            return HistoryContents(
                runs, columns, list(db.execute("SELECT name, run_key FROM baselines"))
            )
        finally:
            db.close()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise RunError(
                f"{path}: the history is locked by another process (a bench result or import "
                f"writing to it) for more than {LOCK_WAIT_S:g} s",
                hint="try again when it is done",
            ) from None
        raise RunError(f"{path}: cannot read the history: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise RunError(f"{path}: not a caramel history ({exc})") from None


def _read_server(url: str) -> HistoryContents:
    with History(url) as history:
        db = history.db
        runs = history.runs()
        assert isinstance(db, PostgresConnection)
        raw = db.db  # psycopg's connection: the SQL of _SCAN is PostgreSQL's own
        with (
            raw.transaction(),
            raw.cursor(name="caramel_figures") as cursor,
        ):  # on the server, read by the chunk
            cursor.itersize = CHUNK_ROWS
            cursor.execute(_SCAN["postgresql"])
            columns = _columns(runs, chunks(cursor))
        return HistoryContents(
            runs,
            columns,
            [tuple(row) for row in db.execute("SELECT name, run_key FROM baselines").fetchall()],
        )


def _runs(path: str, db: sqlite3.Connection) -> list[RunRecord]:
    cursor = db.execute("SELECT * FROM runs ORDER BY started")
    names = [d[0] for d in cursor.description]
    return [decode_run(path, dict(zip(names, row, strict=True))) for row in cursor]


def _check_file(path: str) -> None:
    if not os.path.isfile(path):
        raise RunError(
            f"{path}: no such history file", hint="give --history FILE, or set $CARAMEL_HISTORY"
        )
    with open(path, "rb") as handle:
        head = handle.read(16)
    if not head:
        raise RunError(
            f"{path}: an empty file, not a caramel history",
            hint="a history is made by bench result (or bench import)",
        )
    if head != b"SQLite format 3\x00":
        raise RunError(
            f"{path}: not a caramel history (not an SQLite database)",
            hint="a history is made by bench result (or bench import); an export is read by bench import",
        )


def _table_columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _check_layout(path: str, db: sqlite3.Connection) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not {"runs", "metrics"} <= tables:
        raise RunError(
            f"{path}: an SQLite database, but not a caramel history (no runs and metrics tables)"
        )
    if "meta" in tables:
        found = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if found and str(found[0]).isdigit() and int(found[0]) > SCHEMA_VERSION:
            raise RunError(
                f"{path}: a history of a newer caramel (layout {found[0]}; this caramel reads up to "
                f"{SCHEMA_VERSION})",
                hint="build the page with the caramel that wrote the history",
            )
    missing = sorted(_RUN_COLUMNS - _table_columns(db, "runs")) + sorted(
        _METRIC_COLUMNS - _table_columns(db, "metrics")
    )
    if missing:
        raise RunError(
            f"{path}: a history of another caramel version (missing columns {', '.join(missing)})",
            hint="export it with that caramel (bench export) and import it here",
        )
