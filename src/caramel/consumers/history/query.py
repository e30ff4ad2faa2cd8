"""The history's one read path: each thing a reader needs is one SQL query, the same text on SQLite
and PostgreSQL (history.engine turns its `?` placeholders into psycopg's), its rows read into a
pandas DataFrame where the reader works on columns (the pages' numbers and series, a benchmark's
figures), or taken as rows where it makes an object of each (the runs; one run's figures, which
`bench export` streams). Every reader goes through here: the store's runs and figures (compare,
targets, methodology, predict, `bench history`, export), and the pages (history.reader).

The figures are stored normalised (history.layout): a run's figure is a row of numbers naming its
run and its series by id, so the pages read a million figures as five numbers each and the series,
a few thousand, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from caramel.consumers.history.engine import Cursor, Dialect, Params, Row
from caramel.consumers.history.layout import A_FIGURE, FAILED

if TYPE_CHECKING:  # imported where a frame is made: `bench history list` reads rows, never pandas
    import pandas as pd

CHUNK_ROWS = 50_000  # rows fetched into one DataFrame at a time: the Python tuples held at once

# a figure with its run key and its series (the columns of the metrics view, by name)
FIGURE_FIELDS = (
    "runs.run_key, series.tbl, series.config, series.name, series.unit, series.direction, "
    "figures.n, figures.mean, figures.sd, figures.samples, figures.reason"
)
MEAN, SAMPLES, REASON = 7, 9, 10  # places in a row of FIGURE_FIELDS
JOINED = "FROM figures JOIN runs ON runs.id = figures.run JOIN series ON series.id = figures.series"
NUMBERS = ("n", "mean", "sd")
# a figure as `numbers` reads it: its run's and series' ids, n, mean, sd
NUMBER_TYPES = [("run", "i8"), ("series", "i8"), ("n", "f8"), ("mean", "f8"), ("sd", "f8")]


class Database(Protocol):
    """What a query needs of a connection: history.engine's, or sqlite3's own (history.reader)."""

    def execute(self, sql: str, params: Params = ...) -> Cursor: ...


def frame(db: Database, sql: str, params: Params = ()) -> pd.DataFrame:
    """The rows of `sql` as a DataFrame (its columns named as the query names them), fetched a
    chunk at a time so that a million rows never stand as Python tuples at once."""
    import pandas as pd

    cursor = db.execute(sql, params)
    names = [d[0] for d in cursor.description or ()]  # none: no SELECT, never asked here
    parts = []
    while rows := cursor.fetchmany(CHUNK_ROWS):
        parts.append(pd.DataFrame.from_records(rows, columns=names))
    if not parts:
        return pd.DataFrame(columns=names)
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def run_figures(db: Database, order: str, run_key: str) -> list[Row]:
    """One run's figures (the columns of FIGURE_FIELDS, with their series and samples) in the order
    they were recorded, as rows: what `bench export` streams a run at a time and History.metrics
    makes a Metric of, row by row (a DataFrame of a thousand rows per run would cost as much again
    as reading them)."""
    return db.execute(
        f"SELECT {FIGURE_FIELDS} {JOINED} WHERE runs.run_key = ? ORDER BY figures.{order}",
        (run_key,),
    ).fetchall()


def benchmark_figures(db: Database, order: str, benchmark: str | None) -> pd.DataFrame:
    """The figures of every run (of `benchmark`), with their series and samples, as recorded."""
    where, params = ("", ()) if benchmark is None else ("WHERE runs.benchmark = ?", (benchmark,))
    return frame(db, f"SELECT {FIGURE_FIELDS} {JOINED} {where} ORDER BY figures.{order}", params)


def failures(db: Database, order: str) -> list[Row]:
    """Every failed row's reason, as recorded: (run key, table, configuration text, reason)."""
    return db.execute(
        f"SELECT runs.run_key, series.tbl, series.config, figures.reason {JOINED} "
        f"WHERE {FAILED} ORDER BY figures.{order}"
    ).fetchall()


def failures_by_run(db: Database, order: str) -> dict[str, list[tuple[str, str, str]]]:
    """`failures` by run key: (table, configuration text, reason) of each of the run's."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for run_key, tbl, config, reason in failures(db, order):
        out.setdefault(run_key, []).append((tbl, config, reason))
    return out


def records(db: Database, sql: str, params: Params = ()) -> list[dict[str, Any]]:
    """The rows of `sql` as dicts (column: value): a few thousand rows at most (runs), where a
    DataFrame would cost more to make, and pandas to import, than the rows to read."""
    cursor = db.execute(sql, params)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def runs(db: Database, benchmark: str | None = None) -> list[dict[str, Any]]:
    """The runs (of `benchmark`) by start time, every column."""
    where, params = ("", ()) if benchmark is None else (" WHERE benchmark = ?", (benchmark,))
    return records(db, f"SELECT * FROM runs{where} ORDER BY started, id", params)


def run(db: Database, run_key: str) -> list[dict[str, Any]]:
    """The run of `run_key` (none: an empty list), every column."""
    return records(db, "SELECT * FROM runs WHERE run_key = ?", (run_key,))


def series(db: Database) -> pd.DataFrame:
    """Every series by id: table, configuration (its JSON text), figure name, unit, direction."""
    return frame(db, "SELECT id, tbl, config, name, unit, direction FROM series ORDER BY id")


def numbers(db: Database, dialect: Dialect) -> pd.DataFrame:
    """Every figure as numbers: its run's id, its series' id, n, mean and sd, as recorded. A value
    that is no number (a damaged row of an older history) is NaN: the database hands it as NULL
    (the dialect's `number`), and the pages leave such a figure out (mean) or read it as no spread
    (sd) and one sample (n). A failed row's reason is no figure: left out.

    The rows go straight from the cursor into one numpy record array (five numbers a figure, 40 MB
    for a million; no Python row is kept). Its numbers are copied out as columns of their own; the
    ids are views of it, which a reader numbers anew (history.reader), so the array goes with
    them."""
    import numpy as np
    import pandas as pd

    columns = ", ".join(dialect.number.format(name) for name in NUMBERS)
    cursor = db.execute(
        f"SELECT run, series, {columns} FROM figures WHERE {A_FIGURE} ORDER BY {dialect.order}"
    )
    found = np.fromiter(cursor, dtype=NUMBER_TYPES)
    ids = {name: found[name] for name in ("run", "series")}
    return pd.DataFrame({**ids, **{name: found[name].copy() for name in NUMBERS}}, copy=False)


def plain_numbers(column: pd.Series) -> pd.Series:
    """A column as floats: numbers as they are, anything else (a text, a blob, NULL) NaN. A column
    the database gave as numbers alone is converted at once; only a mixed one is looked at value by
    value (a text "1.5" where a number belongs stays no number)."""
    from pandas.api.types import is_numeric_dtype

    if is_numeric_dtype(column.dtype) and column.dtype != bool:
        return column.astype(float)
    is_number = column.map(lambda value: type(value) in (int, float)).astype(bool)
    return column.where(is_number, float("nan")).astype(float)
