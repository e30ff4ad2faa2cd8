"""Analysed values kept between `bench result` calls: `<run dir>/analyse.db` (SQLite).

Table `analysis`: one row per analyser and result group (root workpackage): the signature of the
files read (path, size, modification time in ns, inode, change time in ns, in reading order) and the
values computed from them, as JSON. A group is analysed again when its signature changes (a log
grew, a job finished, a file appeared, a file was replaced by one of the same size and mtime: `cp
-p` rewrites it, `rsync -t` renames a new one over it, and both change the ctime, which no tool sets
back) or when
the analyser's definition (`config`) differs. Every JSON read back is bounded (state.bounded).

Table `tables`: the finished tables of the last calls (JSON made by report.results), keyed by
everything they depend on (definitions, every group's signature, every workpackage's state), so a
call on an unchanged run costs only the stats of its files; their rows in a column of their own
(`rows`), read only where needed (an unchanged run's tables are shown as they were kept).

Table `rows`: what each row of those tables was made from (report.incremental), keyed by the
definitions and the run's shape only, so a call after a few logs changed makes again only the rows
whose result groups or workpackage states changed.

Everything stored is data, never code: a run folder may sit in a shared project folder, and an
`analyse.db` written by anyone else is read as JSON and checked. A cache of another layout
(`meta.schema` is not SCHEMA_VERSION), a damaged file or an entry that does not decode is a miss:
the values are analysed again, never an error. The run's own `caramel.db` is not touched: the
engine owns it, and a result may be made while the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from caramel.stages.analyse.derived import Problem
from caramel.stages.spec.model import Pattern
from caramel.stages.state import bounded, sqlitefiles
from caramel.stages.state.dbfile import problem

if TYPE_CHECKING:
    from caramel.stages.analyse.analyser import Group

G = TypeVar("G")  # the Group class decode_group makes

# 2: JSON values (1 held sealed pickles: never read again); 3: the rows of the last tables (`rows`);
# 4: the finished tables' rows apart (`tables.rows`), the rows kept with their tables' places
SCHEMA_VERSION = 4
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS analysis (analyser TEXT NOT NULL, root INTEGER NOT NULL, "
    "config TEXT NOT NULL, "
    "signature TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (analyser, root));"
    "CREATE TABLE IF NOT EXISTS tables (key TEXT PRIMARY KEY, created REAL, data TEXT, "
    "rows TEXT);"
    "CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, created REAL, data TEXT)"
)
# WAL only where it is safe (state.sqlitefiles); errors are SQLite's: a cache that fails is not used
ANALYSIS_CACHE = sqlitefiles.FileKind(
    "analysis cache", timeout_s=10, autocommit=True, journal=sqlitefiles.Journal.BY_FILESYSTEM
)
_NOTED: set[str] = set()  # caches said to be read-only (once a process)
KEEP_TABLES = 4  # finished tables kept (one per combination of options used lately)


def _usable_place(path: str) -> bool:
    """A cache file in an existing folder, not a link. A link in a run folder someone else made
    could point the cache at the reader's history (another SQLite file whose `meta` table it would
    write): a linked cache is not used."""
    if any(os.path.islink(name) for name in (path, path + "-wal", path + "-shm")):
        return False
    return os.path.isdir(os.path.dirname(path) or ".")


def _removed_as_damaged(path: str, exc: sqlite3.Error) -> bool:
    """After a failure: a damaged cache is removed, to be made again (it is only a cache); a
    read-only one is noted."""
    if problem(exc) == "readonly":
        _note_readonly(path)
    if problem(exc) != "damaged":
        return False
    _remove(path)
    return True


class AnalysisCache:
    """Best effort: a cache that cannot be read or written is simply not used."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None
        if path and _usable_place(path):
            self._open(path)

    def _open(self, path: str) -> None:
        for _attempt in range(2):
            try:
                db = self.db = sqlitefiles.open_connection(path, ANALYSIS_CACHE)
                if not _current(db):
                    _make(db)
                return
            except sqlite3.Error as exc:
                self.close()
                if not _removed_as_damaged(path, exc):
                    return  # full, read-only, locked: not used this time

    def load(
        self, analyser: str, config: str, roots: set[int] | None = None
    ) -> dict[int, tuple[str, str]]:
        """root -> (signature, data) of the groups cached for this analyser definition (`roots`:
        only these groups)."""
        if self.db is None:
            return {}
        query = "SELECT root, signature, data FROM analysis WHERE analyser=? AND config=?"
        try:
            if roots is not None and len(roots) <= 500:
                rows = self.db.execute(
                    query + f" AND root IN ({','.join('?' * len(roots))})",
                    (analyser, config, *sorted(roots)),
                ).fetchall()
            else:
                rows = self.db.execute(query, (analyser, config)).fetchall()
        except sqlite3.Error:
            return {}
        return {root: (sig, data) for root, sig, data in rows}

    def store(self, analyser: str, config: str, entries: list[tuple[int, str, str]]) -> None:
        if self.db is None or not entries:
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "DELETE FROM analysis WHERE analyser=? AND config<>?", (analyser, config)
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO analysis VALUES (?,?,?,?,?)",
                ((analyser, root, config, sig, data) for root, sig, data in entries),
            )
            self.db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    def load_tables(self, key: str) -> tuple[str, str] | None:
        """The JSON of the finished tables made from exactly this state of the run and of their
        rows, or None."""
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT data, rows FROM tables WHERE key=?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        if row is None or not all(isinstance(text, str) for text in row):
            return None
        return row[0], row[1]

    def store_tables(self, key: str, data: str, rows: str) -> None:
        self._put("tables", key, data, rows)

    def load_rows(self, key: str) -> str | None:
        """The JSON of the rows kept for tables of this shape (report.incremental), or None."""
        return self._get("rows", key)

    def store_rows(self, key: str, data: str) -> None:
        self._put("rows", key, data)

    def _get(self, table: str, key: str) -> str | None:
        if self.db is None:
            return None
        try:
            row = self.db.execute(f"SELECT data FROM {table} WHERE key=?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row and isinstance(row[0], str) else None

    def _put(self, table: str, key: str, *data: str) -> None:
        if self.db is None:
            return
        try:
            self.db.execute(
                f"INSERT OR REPLACE INTO {table} VALUES (?,?{',?' * len(data)})",
                (key, time.time(), *data),
            )
            self.db.execute(
                f"DELETE FROM {table} WHERE key NOT IN (SELECT key FROM {table} ORDER BY created "
                "DESC LIMIT ?)",
                (KEEP_TABLES,),
            )
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _note_readonly(path: str) -> None:
    """Say once a process that the cache at `path` is not used: a run folder the reader may not
    write (another user's, a read-only mount) is analysed without it, to the same tables."""
    if path not in _NOTED:
        _NOTED.add(path)
        print(
            f"note: the analysis cache {path} is read-only to you: the run is analysed without it",
            file=sys.stderr,
        )


def _remove(path: str) -> None:
    for name in (path, path + "-wal", path + "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(name)


class Damaged(ValueError):
    """A cached entry that is not what this caramel writes: a miss."""


_SCALARS = (int, float, str)
# one encoder for every group (json.dumps with separators= makes one a call: 10,000 groups a run)
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def encode_group(group: Group) -> str:
    """A result group (analyse.analyser.Group) as JSON; problems name their pattern."""
    return _COMPACT.encode(
        [
            group.root,
            group.members,
            group.values,
            group.missing,
            group.started,
            [[p.pattern.name, p.expression, p.wp_id, p.message] for p in group.problems],
            {name: list(entry) for name, entry in group.dropped.items()},
        ]
    )


def decode_group(text: str, make: Callable[..., G], patterns: dict[str, Pattern]) -> G:
    """The group `encode_group` wrote (`make`: the Group class); Damaged when it is anything
    else."""
    try:
        root, members, values, missing, started, problems, dropped = bounded.loads(
            text, "a cached result group"
        )
        ok = _well_typed(root, members, values, missing, started)
        group = make(
            root,
            members,
            values,
            missing,
            started,
            _problems(problems, patterns),
            {str(name): (int(count), str(first)) for name, (count, first) in dropped.items()},
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise Damaged(str(exc)) from None
    if not ok:
        raise Damaged("unexpected values")
    return group


def _well_typed(root: Any, members: Any, values: Any, missing: Any, started: Any) -> bool:
    """Whether the decoded fields have a group's types (JSON's data: anything until checked)."""
    return (
        type(root) is int
        and _all_of(int, members)
        and _scalar_values(values)
        and _all_of(str, missing)
        and type(started) is bool
    )


def _all_of(kind: type, items: Any) -> bool:
    return all(type(item) is kind for item in items)


def _scalar_values(values: Any) -> bool:
    """A mapping of values a table cell may hold: None, a bool or one of _SCALARS."""
    return isinstance(values, dict) and all(
        v is None or type(v) in _SCALARS or type(v) is bool for v in values.values()
    )


def _problems(problems: Any, patterns: dict[str, Pattern]) -> list[Problem]:
    """The cached problems, each naming its pattern (KeyError for one the analyser lacks)."""
    return [
        Problem(patterns[name], str(expression), int(wp_id), str(message))
        for name, expression, wp_id, message in problems
    ]


def _current(db: sqlite3.Connection) -> bool:
    try:
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    except sqlite3.OperationalError:  # no meta table: new, or written by another layout
        return False
    return row is not None and row[0] == str(SCHEMA_VERSION)


def _make(db: sqlite3.Connection) -> None:
    """A fresh cache of this layout (what another layout held is dropped: it was only a cache)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for table in ("analysis", "tables", "rows", "meta"):
            db.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in SCHEMA.split(";"):
            db.execute(statement)
        db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
