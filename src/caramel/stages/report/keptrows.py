"""The rows of the finished tables `bench result` keeps (analyse.db's `tables.rows`), as JSON lines.

    text = rows_text(tables, lines)    # lines: per table, its rows' lines where known, else None
    for data, lines in read_rows(text, len(tables)): ...    # ValueError: not what this wrote

Each table is a header line (name, style, separator, transpose, keys, configuration columns, notes,
caption, number of rows) followed by a line a row: its typed values, cells, status and leaf, the
items of a JSON array without its brackets. A table patched after a change (report.patch) keeps the
lines of the rows it kept and encodes those of the rows made again only. The lines are read back
joined into one JSON array: every fourth item is a row's values (a slice: no list made a row).
"""

from __future__ import annotations

import json
from typing import Any

from caramel.stages.report.table import (
    RECORD_ROWS,
    TableData,
    table_data_from_record,
    table_data_record,
)
from caramel.stages.state import bounded

# one encoder for every row (json.dumps with separators= makes one a call: 10,000 rows a table)
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def row_line(values: list[object], cells: list[str], status: str, leaf: int) -> str:
    """A table row's line."""
    return _COMPACT.encode([values, cells, status, leaf])[1:-1]


def row_lines(data: TableData) -> list[str]:
    """Each row of the table as its line."""
    rows = zip(data.values, data.cells, data.statuses, data.leaves, strict=True)
    return [row_line(values, cells, status, leaf) for values, cells, status, leaf in rows]


def rows_text(tables: list[TableData], lines: list[list[str] | None]) -> str:
    """The tables' rows as kept: `lines`, per table, its rows' lines where they are known."""
    out: list[str] = []
    for data, known in zip(tables, lines, strict=True):
        out.append(_COMPACT.encode(_header(data)))
        out += known if known is not None else row_lines(data)
    return "\n".join(out)


def _header(data: TableData) -> list[object]:
    """The table's record (report.table) without its rows' columns, and its number of rows."""
    record = table_data_record(data)
    del record[RECORD_ROWS]
    return [*record, len(data.values)]


def read_rows(text: str, count: int) -> list[tuple[TableData, list[str]]]:
    """The `count` tables `rows_text` wrote, each with its rows' lines; ValueError (or TypeError)
    for anything else (JSON from a file anyone may have written)."""
    lines = text.split("\n") if count else []
    out = []
    at = 0
    for _table in range(count):
        if at >= len(lines):
            raise ValueError("kept rows of fewer tables")
        header = bounded.loads(lines[at], "a kept table")
        if type(header) is not list or len(header) != 9:
            raise ValueError("a kept table's header of another shape")
        rows = int(header[-1])
        mine = lines[at + 1 : at + 1 + rows]
        if rows < 0 or len(mine) != rows:
            raise ValueError("a kept table of fewer rows than it says")
        joined = "[" + ",".join(mine) + "]"
        out.append(
            (_table_data(header, bounded.loads(joined, "kept rows", bounded.CACHE_BYTES)), mine)
        )
        at += 1 + rows
    if at != len(lines):
        raise ValueError("kept rows of more tables")
    return out


def _table_data(header: Any, items: Any) -> TableData:
    """The table of a header and its rows' items (checked as report.table checks a kept table)."""
    if type(items) is not list or len(items) != 4 * header[-1]:
        raise ValueError("kept rows of another shape")
    values, cells, statuses, leaves = items[0::4], items[1::4], items[2::4], items[3::4]
    if set(map(type, statuses)) - {str} or set(map(type, leaves)) - {int}:  # C speed
        raise ValueError("kept rows whose status or leaf is of another type")
    record = list(header[:-1])
    record[RECORD_ROWS.start : RECORD_ROWS.start] = [values, cells, statuses, leaves]
    return table_data_from_record(record)
