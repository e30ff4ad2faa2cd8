"""The grouped read of an SQLite history (what history.reader uses first): a figure's names per run
from the key's covering index, its numbers by rowid.

SQLite joining five columns into a key text for each of a million rows, and judging each number's
type, had been most of the time of reading a history; handing Python a row's numbers is most of what
is left (a tuple and its values per row). Both queries run inside the caller's read transaction, so
they read one snapshot. A history this read does not take (`Irregular`) is read by the plain scan.
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from caramel.consumers.history.columns import FIELD, FigureColumns, chunks, in_run_order, numbering
from caramel.consumers.history.layout import RunRecord

# per run, the rowids, tables, configurations and names of its rows, each list as one text, from
# the key's covering index (a fifth of the time of a scan joining them)
GROUPS = (
    "SELECT run_key, group_concat(rowid), group_concat(tbl, '\x1f'), group_concat(config, '\x1f'), "
    "group_concat(name, '\x1f') FROM metrics GROUP BY run_key"
)
# every row's unit and direction and numbers in rowid order
NUMBERS = "SELECT unit, direction, n, mean, sd FROM metrics ORDER BY rowid"
_SEQUENCES_KEPT = 64  # distinct lists of names remembered (each a run's texts, some 100 kB)


class Irregular(Exception):
    """A history the grouped read does not take (a NULL or a separator in a name, a writer between
    its two queries): read by the plain scan instead, which says what is wrong, if anything."""


def grouped_columns(db: sqlite3.Connection, runs: list[RunRecord]) -> FigureColumns:
    """The figures of `runs` as columns, read inside the caller's read transaction on `db` (which
    has read the runs: it holds the shared lock). A row is placed by its rowid: the groups' rowids,
    sorted, are the order of the numbers."""
    run, name, names = _name_columns(runs, db.execute(GROUPS))
    units, unit, values = read_numbers(db)
    if len(unit) != len(run):
        raise Irregular("rows written between the two reads")
    if not len(unit):
        return FigureColumns()
    # a figure's key: its (table, configuration, name) and its (unit, direction), numbered together
    pairs, key = np.unique(name.astype(np.int64) * len(units) + unit, return_inverse=True)
    name_texts, unit_texts = list(names), [tuple(_text(v) for v in pair) for pair in units]
    keys = [
        (*name_texts[pair // len(units)], *unit_texts[pair % len(units)]) for pair in pairs.tolist()
    ]
    return in_run_order(keys, run, key.astype(np.int32), values)


def read_numbers(db: sqlite3.Connection) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    """Every row's (unit, direction) pair numbered (the pairs in the order of their numbers), each
    row's number of its pair, and the rows' n, mean and sd as three rows of floats, by rowid."""
    units = numbering()  # (unit, direction): its number
    unit_parts, value_parts = [], []
    for chunk in chunks(db.execute(NUMBERS)):
        rows = np.array(chunk, dtype=object)
        pairs = zip(rows[:, 0], rows[:, 1], strict=True)
        numbers = np.fromiter(map(units.__getitem__, pairs), dtype=np.int64, count=len(rows))
        unit_parts.append(numbers)
        value_parts.append(_numbers(rows[:, 2:]))
    if not unit_parts:
        return [], np.zeros(0, dtype=np.int64), np.zeros((3, 0))
    return list(units), np.concatenate(unit_parts), np.concatenate(value_parts, axis=1)


def _name_columns(
    runs: list[RunRecord], groups: Iterable[tuple[str, ...]]
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Each row's run and (table, configuration, name) number, in rowid order, and the names
    numbered. A run's three texts are most often those of a run before: one dict lookup finds its
    numbers."""
    run_index = {run.run_key: index for index, run in enumerate(runs)}
    names = numbering()  # (table, configuration, name): its number
    sequences: dict[
        tuple[str, str, str], np.ndarray
    ] = {}  # a run's three texts: its rows' name numbers
    rowid_parts, run_parts, name_parts = [], [], []
    for run_key, rowids, tables, configs, metric_names in groups:
        texts = (tables, configs, metric_names)
        numbers = sequences.get(texts)
        if numbers is None:
            numbers = _name_numbers(texts, rowids.count(",") + 1, names)
            if len(sequences) < _SEQUENCES_KEPT:
                sequences[texts] = numbers
        rowid_parts.append(np.fromstring(rowids, dtype=np.int64, sep=","))
        run_parts.append(np.full(len(numbers), run_index.get(run_key, -1), dtype=np.int32))
        name_parts.append(numbers)
    if not run_parts:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), names
    order = np.argsort(np.concatenate(rowid_parts))
    return np.concatenate(run_parts)[order], np.concatenate(name_parts)[order], names


def _name_numbers(texts: tuple[str, str, str], rows: int, names: defaultdict) -> np.ndarray:
    """The numbers of a run's (table, configuration, name) triples, new ones numbered as they
    come."""
    fields = [text.split(FIELD) for text in texts]
    if any(
        len(values) != rows for values in fields
    ):  # a NULL (left out by group_concat) or a separator
        raise Irregular("a name the grouped read does not take")
    return np.fromiter(
        map(names.__getitem__, zip(*fields, strict=True)), dtype=np.int32, count=rows
    )


def _numbers(stored: np.ndarray) -> np.ndarray:
    """n, mean and sd as rows of floats from their stored values (an object array, a row per
    figure): as the plain scan's SQL takes them (n an integer above 0, else 1; mean a number, else
    infinite, left out by the pages; sd a number, else 0), by numpy at once where every value is a
    number."""
    counts, numbers = stored[:, 0].tolist(), stored[:, 1:].ravel().tolist()
    if set(map(type, counts)) == {int} and set(map(type, numbers)) <= {int, float}:
        values = stored.astype(float).T
        values[0][values[0] <= 0] = 1.0
        return values
    return np.array(
        [
            [n if type(n) is int and n > 0 else 1 for n in counts],
            [v if type(v) in (int, float) else math.inf for v in stored[:, 1].tolist()],
            [v if type(v) in (int, float) else 0.0 for v in stored[:, 2].tolist()],
        ],
        dtype=float,
    )


def _text(value: object) -> str:
    return "" if value is None else str(value)
