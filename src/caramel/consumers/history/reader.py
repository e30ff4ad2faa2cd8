"""Reading a history read-only, checked: what pages (the dashboard, the report) draw from.

A file that is missing, not SQLite, of another caramel's layout or locked is a user error naming
the file (exit 2). A history of an older layout is migrated first (history.layout.migrate). The
figures are read by history.query, the one read path: the runs, the series, and every figure as
numbers, into DataFrames.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from caramel.consumers.history import query
from caramel.consumers.history.engine import SQLITE, Dialect, is_url
from caramel.consumers.history.layout import ADDED_COLUMNS, METRIC_COLUMNS, RUN_COLUMNS
from caramel.consumers.history.store import SCHEMA_VERSION, History, RunRecord, decode_run
from caramel.errors import RunError
from caramel.stages.state import sqlitefiles

LOCK_WAIT_S = 3.0  # a `bench result` writing holds the lock for well under a second
FIGURE_NUMBERS = ("run", "key", "n", "mean", "sd")

# run_key, tbl, config (JSON), name, unit, direction, n, mean, sd
FigureRow = tuple[str, str, str, str, str, str, int, float, float]
# tbl, config (JSON), name, unit, direction: what one figure is, in every run that has it
FigureKey = tuple[str, str, str, str, str]


@dataclass
class HistoryContents:
    """Everything a page needs of one history, in the order it was recorded: the runs by start
    time, the figure keys (series) in the order they first appear, and every figure as a row of
    `numbers`: its run and key (positions in `runs` and `keys`), n, mean and sd (NaN where none)."""

    runs: list[RunRecord] = field(default_factory=list)
    keys: list[FigureKey] = field(default_factory=list)
    numbers: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FIGURE_NUMBERS))
    baselines: list[tuple[str, str]] = field(default_factory=list)  # (name, run key)
    # each run's failed rows (table, configuration text, reason) by run key: no figures
    failures: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)

    @property
    def figures(self) -> list[FigureRow]:
        """The figures as rows (a small history's view; pages read `numbers`)."""
        c = self.numbers
        return [
            (self.runs[r].run_key, *self.keys[k], int(n) if n > 0 else 1, float(mean), float(sd))
            for r, k, n, mean, sd in zip(
                *(c[name].tolist() for name in FIGURE_NUMBERS), strict=True
            )
        ]


def read_history(path: str) -> HistoryContents:
    """The runs, figures and baselines of the history file at `path`, opened read-only (or of the
    PostgreSQL history at a URL: history.engine)."""
    if is_url(path):
        with History(path) as history:
            return _contents(history.db, history.db.shown, history.db.dialect)
    _check_file(path)
    try:
        kind = sqlitefiles.FileKind("history", timeout_s=LOCK_WAIT_S)
        db = sqlitefiles.open_connection(path, kind, readonly=True)
        try:
            if _check_layout(path, db) < SCHEMA_VERSION:
                db.close()
                History(path).db.close()  # migrated once (history.layout.migrate)
                db = sqlitefiles.open_connection(path, kind, readonly=True)
            db.execute("BEGIN")  # one snapshot for the reads below: a writer waits or is not seen
            return _contents(db, path, SQLITE)
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


def _contents(db: query.Database, shown: str, dialect: Dialect) -> HistoryContents:
    """The runs (by start time), the series and the figures of the history open on `db`. The
    figures are put in the order of the runs (within a run, as written), figures of no run left
    out, and the series numbered in the order they first appear there."""
    runs = query.runs(db)
    records = [decode_run(shown, data) for data in runs]
    numbers = query.numbers(db, dialect)
    # the figures' runs as positions in `runs`, and their series numbered as they first appear,
    # set in place: a million figures are 40 MB, and every copy of them a peak the process keeps
    ids = np.asarray([data["id"] for data in runs], dtype=np.int64)
    position = np.full(int(ids.max(initial=0)) + 2, -1, dtype=np.int32)
    position[ids] = np.arange(len(ids))
    run_ids = numbers["run"].to_numpy(np.int64)
    at = position[np.clip(run_ids, 0, len(position) - 1)]
    if (at < 0).any():
        numbers = numbers[at >= 0]
        at = at[at >= 0]
    if (np.diff(at) < 0).any():
        ranked = np.argsort(at, kind="stable")
        numbers, at = numbers.iloc[ranked], at[ranked]
    codes, used = pd.factorize(numbers["series"])
    # a frame of the columns as they are (pandas copies a column set into a frame)
    columns = {name: numbers[name].to_numpy() for name in query.NUMBERS}
    numbers = pd.DataFrame({"run": at, "key": codes, **columns}, copy=False)
    series = query.series(db).set_index("id").loc[used]
    keys = list(zip(*(_texts(series[c]) for c in series.columns), strict=True))
    baselines = [tuple(row) for row in db.execute("SELECT name, run_key FROM baselines").fetchall()]
    failures = query.failures_by_run(db, dialect.order)
    return HistoryContents(records, keys, numbers, baselines, failures)


def _texts(column: pd.Series) -> list[str]:
    """A column of the series as texts. A value SQLite holds as a BLOB (a history damaged or
    written by another program) is decoded as UTF-8, bytes that do not decode replaced: pandas'
    `astype(str)` raised UnicodeDecodeError on them."""
    return [
        value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        for value in column.fillna("").tolist()
    ]


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
            hint=(
                "a history is made by bench result (or bench import); "
                "an export is read by bench import"
            ),
        )


def _check_layout(path: str, db: sqlite3.Connection) -> int:
    """The layout of the history (its schema number), refusing a database that is no history or a
    history of a newer caramel."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "runs" not in tables or not ({"metrics", "figures"} & tables):
        raise RunError(
            f"{path}: an SQLite database, but not a caramel history (no runs and figures tables)"
        )
    version = _schema_version(path, db) if "meta" in tables else 1
    if "figures" not in tables:  # an older layout, migrated if it holds what migrating copies
        _check_migratable(path, db)
    return version


def _schema_version(path: str, db: sqlite3.Connection) -> int:
    """The schema number the meta table holds (none: 1), refusing a newer caramel's (or one that
    is no whole number)."""
    found = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if found is None:
        return 1
    if str(found[0]).isdigit() and int(found[0]) <= SCHEMA_VERSION:
        return int(found[0])
    raise RunError(
        f"{path}: a history of a newer caramel (layout {found[0]}; this "
        f"caramel reads up to {SCHEMA_VERSION})",
        hint="build the page with the caramel that wrote the history",
    )


def _check_migratable(path: str, db: sqlite3.Connection) -> None:
    """A history of an older layout holds the columns migrating copies."""
    missing = sorted(set(RUN_COLUMNS) - set(ADDED_COLUMNS) - _table_columns(db, "runs")) + sorted(
        set(METRIC_COLUMNS) - {"reason"} - _table_columns(db, "metrics")
    )
    if missing:
        raise RunError(
            f"{path}: a history of another caramel version (missing columns {', '.join(missing)})",
            hint="export it with that caramel (bench export) and import it here",
        )


def _table_columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
