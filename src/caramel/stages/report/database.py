"""`<database>` results: rows written into an SQLite table, as JUBE writes them.

The file is `<run dir>/result/<name>.dat` unless the database names one with `file=` (then the
`.dat` file only holds that path, as in JUBE). The table is named after the result; its columns
are the keys' titles (or names), typed after the first row (int, float, text); the primary key is
`primekeys=` plus the keys marked `primekey="true"`; rows are written with REPLACE, so running the
result again updates rows instead of adding duplicates. Columns that are no longer keys are dropped,
new keys are added, and a changed primary key is an error (SQLite cannot alter it).

Where the rows go is decided by `database_file` (docs/security.md, "Run folders you did not make"):
the model is read from the run's record, so for a run someone else made (`foreign`: `--no-eval`, or
a run folder another user owns) `file=` is taken as written, without `~` or `$VAR` from the reader's
environment, and must name a file inside the run folder. In every case the file is never a caramel
history (the reader's or any other: a history's rows are not a result table's to replace), and a
link inside the run folder is never followed.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from caramel.fs.paths import inside, is_within, same_file
from caramel.fs.writes import open_folder, write_text
from caramel.stages.analyse.inputs import AnalyseError
from caramel.stages.report.table import TableData
from caramel.stages.spec.model import Table
from caramel.stages.state import sqlitefiles


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_type(value: object) -> str:
    """JUBE names the column type after the Python type of the first row's value."""
    return type(value).__name__.replace("str", "text")


# As JUBE opens it (jube/result_types/database.py, DatabaseData.create_result: sqlite3.connect of
# the path, so SQLite's journal and a 5 s lock wait); errors become AnalyseErrors naming it here
RESULT_DATABASE = sqlitefiles.FileKind("result database", timeout_s=5.0)
HISTORY_TABLES = {
    "runs",
    "metrics",
    "baselines",
    "meta",
}  # history.store's schema: a file having them is a history


def database_file(
    table: Table, default_path: str, run_dir: str, foreign: bool, history: str
) -> str:
    """The file the rows of `table` go to (see the module), made ready: its folder exists, its
    `.dat` (which then names the file, as in JUBE) is written. Refused with the table's file and
    line."""
    path = _named_file(table, default_path, run_dir, foreign)
    _refuse_history(table, path, history)
    for target in (default_path, path):
        _refuse_link(table, run_dir, target)
    if table.db_file:
        root = run_dir if is_within(run_dir, default_path) else None
        write_text(default_path, table.db_file, root=root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def _refuse_history(table: Table, path: str, history: str) -> None:
    """A history's rows are not a result table's to replace: the reader's, nor any other."""
    if (history and same_file(path, history)) or _is_history(path):
        raise AnalyseError(
            f"database '{table.name}': file {path} is a caramel history; a result table never "
            "writes into a history",
            table.where,
            hint="give the <database> another file=; bench result adds the run to the "
            "history itself",
        )


def _named_file(table: Table, default_path: str, run_dir: str, foreign: bool) -> str:
    """The `.dat` file, else the file `file=` names: of a foreign run as written and inside it, of
    one's own with `~` and `$VAR` expanded."""
    if not table.db_file:
        return default_path
    if foreign:
        return inside(
            run_dir,
            table.db_file,
            f"file= of database '{table.name}'",
            table.where,
            absolute_ok=True,
        )
    return os.path.abspath(os.path.expanduser(os.path.expandvars(table.db_file)))


def _refuse_link(table: Table, run_dir: str, target: str) -> None:
    """A file inside the run folder is written through no link, on the way or as the file."""
    if not is_within(run_dir, target):
        return
    os.close(open_folder(os.path.dirname(target), root=run_dir))  # no link on the way
    if os.path.islink(target):
        raise AnalyseError(
            f"database '{table.name}': {target} is a symbolic link; caramel does not write "
            "through links in a run folder",
            table.where,
            hint=f"remove the link {target}",
        )


def _is_history(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    try:
        db = sqlitefiles.open_connection(path, RESULT_DATABASE, readonly=True)
        try:
            names = {
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return HISTORY_TABLES <= names


def write_database(
    table: Table,
    data: TableData,
    default_path: str,
    run_dir: str | None = None,
    foreign: bool = False,
    history: str = "",
) -> str:
    """Write `data` into the database file (`database_file`); returns its path."""
    primekeys = _primekeys(table, data)
    path = database_file(
        table,
        default_path,
        run_dir or os.path.dirname(os.path.dirname(default_path)),
        foreign,
        history,
    )
    if data.values:
        _write_rows(table, data, path, primekeys)
    return path


def _primekeys(table: Table, data: TableData) -> list[str]:
    """`primekeys=` and the keys marked `primekey="true"` (by heading), each a key of the table."""
    marked = [
        key.heading for key, col in zip(data.keys, table.columns, strict=False) if col.primekey
    ]
    primekeys = list(dict.fromkeys(table.primekeys + marked))
    unknown = [k for k in primekeys if k not in data.headings]
    if unknown:
        raise AnalyseError(
            f"database '{table.name}': primary key {', '.join(unknown)} is not one of its keys "
            f"({', '.join(data.headings)})",
            table.where,
            hint="primekeys= names the keys' titles (or names when they have no title)",
        )
    return primekeys


def _column_definitions(data: TableData, primekeys: list[str]) -> str:
    """The table's columns, typed after the first row, and its primary key."""
    first = data.values[0]
    columns = ", ".join(
        f"{_ident(h)} {_sql_type(_stored(k.format, v, ''))}"
        for h, k, v in zip(data.headings, data.keys, first, strict=True)
    )
    if not primekeys:
        return columns
    return columns + ", PRIMARY KEY (" + ", ".join(_ident(k) for k in primekeys) + ")"


def _stored_rows(data: TableData) -> list[list[object]]:
    return [
        [_stored(key.format, v, cell) for key, v, cell in zip(data.keys, vals, cells, strict=True)]
        for vals, cells in zip(data.values, data.cells, strict=True)
    ]


def _write_rows(table: Table, data: TableData, path: str, primekeys: list[str]) -> None:
    """The rows replace those of the same primary key; the table is made, or its columns made the
    keys', first."""
    rows = _stored_rows(data)
    columns = _column_definitions(data, primekeys)
    try:
        db = sqlitefiles.open_connection(path, RESULT_DATABASE)
    except sqlite3.Error as exc:
        raise AnalyseError(
            f"database '{table.name}': cannot open {path}: {exc}", table.where
        ) from None
    try:
        name = _ident(table.name)
        db.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns})")
        _align_columns(db, table, path, data.headings, primekeys)
        marks = ",".join("?" * len(data.headings))
        names = ", ".join(_ident(h) for h in data.headings)
        db.executemany(f"REPLACE INTO {name} ({names}) VALUES ({marks})", rows)
        db.commit()
    except sqlite3.Error as exc:
        raise AnalyseError(
            f"database '{table.name}': cannot write {path}: {exc}", table.where
        ) from None
    finally:
        db.close()


def _align_columns(
    db: sqlite3.Connection, table: Table, path: str, headings: list[str], primekeys: list[str]
) -> None:
    """The columns that are no longer keys dropped, the new keys added; a changed primary key is
    refused (SQLite cannot alter it)."""
    name = _ident(table.name)
    info = db.execute(f"PRAGMA table_info({name})").fetchall()
    _refuse_other_primekey(info, table, path, primekeys)
    existing = [row[1] for row in info]
    for col in _absent(existing, headings):
        db.execute(f"ALTER TABLE {name} DROP COLUMN {_ident(col)}")
    for h in _absent(headings, existing):
        db.execute(f"ALTER TABLE {name} ADD COLUMN {_ident(h)} text")


def _refuse_other_primekey(
    info: list[tuple[Any, ...]], table: Table, path: str, primekeys: list[str]
) -> None:
    """The table's primary key (`PRAGMA table_info`'s rows) must be the one asked for."""
    have_keys = {row[1] for row in info if row[5]}
    if have_keys != set(primekeys):
        raise AnalyseError(
            f"database '{table.name}' in {path} has the primary key "
            f"({', '.join(sorted(have_keys)) or 'none'}), this result asks for "
            f"({', '.join(primekeys) or 'none'})",
            table.where,
            hint="SQLite cannot change a primary key: remove the table or use another file",
        )


def _absent(names: list[str], among: list[str]) -> list[str]:
    return [n for n in names if n not in among]


def _stored(fmt: str, value: object, cell: str) -> object:
    """A database keeps the typed value; a key with format= keeps the formatted text (as JUBE)."""
    if value is None:
        return None
    return cell if fmt else value
