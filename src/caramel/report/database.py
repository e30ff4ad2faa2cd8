"""`<database>` results: rows written into an SQLite table, as JUBE writes them.

The file is `<run dir>/result/<name>.dat` unless the database names one with `file=` (then the
`.dat` file only holds that path, as in JUBE). The table is named after the result; its columns
are the keys' titles (or names), typed after the first row (int, float, text); the primary key is
`primekeys=` plus the keys marked `primekey="true"`; rows are written with REPLACE, so running the
result again updates rows instead of adding duplicates. Columns that are no longer keys are dropped,
new keys are added, and a changed primary key is an error (SQLite cannot alter it).
"""

from __future__ import annotations

import os
import sqlite3

from caramel.analyse.inputs import AnalyseError
from caramel.report.table import TableData
from caramel.spec.model import Table


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_type(value) -> str:
    """JUBE names the column type after the Python type of the first row's value."""
    return type(value).__name__.replace("str", "text")


def write_database(table: Table, data: TableData, default_path: str) -> str:
    """Write `data` into the database file; returns its path."""
    headings = data.headings
    primekeys = list(dict.fromkeys(table.primekeys + [key.heading for key, col in zip(data.keys, table.columns,
                                                                                       strict=False)
                                                      if col.primekey]))
    unknown = [k for k in primekeys if k not in headings]
    if unknown:
        raise AnalyseError(f"database '{table.name}': primary key {', '.join(unknown)} is not one of its keys "
                           f"({', '.join(headings)})", table.where,
                           hint="primekeys= names the keys' titles (or names when they have no title)")
    if table.db_file:
        path = os.path.expanduser(os.path.expandvars(table.db_file))
        os.makedirs(os.path.dirname(default_path) or ".", exist_ok=True)
        with open(default_path, "w") as handle:
            handle.write(table.db_file)
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    else:
        path = default_path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if not data.values:
        return path
    first = data.values[0]
    rows = [[_stored(key.format, v, cell) for key, v, cell in zip(data.keys, vals, cells, strict=True)]
            for vals, cells in zip(data.values, data.cells, strict=True)]
    columns = ", ".join(f"{_ident(h)} {_sql_type(_stored(k.format, v, ''))}"
                        for h, k, v in zip(headings, data.keys, first, strict=True))
    if primekeys:
        columns += ", PRIMARY KEY (" + ", ".join(_ident(k) for k in primekeys) + ")"
    db = sqlite3.connect(path)
    try:
        name = _ident(table.name)
        db.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns})")
        info = db.execute(f"PRAGMA table_info({name})").fetchall()
        existing = [row[1] for row in info]
        have_keys = {row[1] for row in info if row[5]}
        if have_keys != set(primekeys):
            raise AnalyseError(f"database '{table.name}' in {path} has the primary key "
                               f"({', '.join(sorted(have_keys)) or 'none'}), this result asks for "
                               f"({', '.join(primekeys) or 'none'})", table.where,
                               hint="SQLite cannot change a primary key: remove the table or use another file")
        for col in existing:
            if col not in headings:
                db.execute(f"ALTER TABLE {name} DROP COLUMN {_ident(col)}")
        for h in headings:
            if h not in existing:
                db.execute(f"ALTER TABLE {name} ADD COLUMN {_ident(h)} text")
        marks = ",".join("?" * len(headings))
        db.executemany(f"REPLACE INTO {name} ({', '.join(_ident(h) for h in headings)}) VALUES ({marks})", rows)
        db.commit()
    except sqlite3.Error as exc:
        raise AnalyseError(f"database '{table.name}': cannot write {path}: {exc}", table.where) from None
    finally:
        db.close()
    return path


def _stored(fmt: str, value, cell: str):
    """A database keeps the typed value; a key with format= keeps the formatted text (as JUBE)."""
    if value is None:
        return None
    return cell if fmt else value
