"""Result tables: columns, units, sorting and formatting as JUBE does them, and the output styles.

    data = make_table(table, rows, units)      # a <table> (or <database>) of the benchmark, filled
    text = render(data, style="csv")           # csv | pretty | aligned | markdown | json

JUBE's rules kept here: a column shows `title` (else the name) followed by `[unit]` when the pattern
or parameter has a unit; `format` is a Python format spec (`.2f`); a row in which none of the
columns exists is left out; `sort` orders by typed values, a sort key that does not exist is
ignored (JUBE's CompType: comparing with a missing value is never "less"). caramel adds the
`status` column when a row is not simply done, so a failed or unfinished workpackage never looks
like a success.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from caramel.stages.report.dataset import MISSING, STATUS, Row, text_of

# STYLES re-exported: kept here for the table's readers
from caramel.stages.report.styles import STYLES as STYLES  # noqa: PLC0414
from caramel.stages.spec.model import Result, Table


@dataclass
class Key:
    name: str
    title: str | None
    format: str
    colw: int
    unit: str = ""

    @property
    def heading(self) -> str:
        text = self.title if self.title is not None else self.name
        return f"{text}[{self.unit}]" if self.unit else text


@dataclass
class TableData:
    name: str
    style: str
    separator: str
    transpose: bool
    keys: list[Key]
    values: list[list[object]]  # typed values (None: no value)
    cells: list[list[str]]  # formatted text
    statuses: list[str] = field(default_factory=list)  # each row's status (see report.dataset)
    leaves: list[int] = field(default_factory=list)  # each row's last workpackage id
    config_columns: list[str] = field(
        default_factory=list
    )  # columns naming a configuration, not parameters
    notes: list[str] = field(default_factory=list)  # what could not be read while filling it
    caption: str = (
        ""  # how its means and sds were taken (`estimator: ...`); shown by pretty, markdown, json
    )

    @property
    def headings(self) -> list[str]:
        return [k.heading for k in self.keys]


@dataclass(frozen=True)
class Shown:
    """A table as `bench result` shows it in its own style, kept with the table: its text, the
    columns whose cells hold the separator (`clashes`) and its caption."""

    style: str
    text: str
    clashes: list[str]
    caption: str


def shown(data: TableData) -> Shown:
    return Shown(data.style, render(data), clashes(data), data.caption)


class Made:
    """A filled table of a result: its `<result>`, its `<table>` declaration and its rows; `shown`:
    how it shows in its own style, where known. A table kept by an earlier call gives its rows as
    their record's JSON (`kept`), decoded when first read: an unchanged run's tables are shown
    from `shown` without their rows made again."""

    __slots__ = ("result", "table", "shown", "_data", "_kept")

    def __init__(
        self,
        result: Result,
        table: Table,
        data: TableData | None = None,
        shown: Shown | None = None,
        kept: Callable[[], TableData] | None = None,
    ) -> None:
        self.result, self.table, self.shown = result, table, shown
        self._data, self._kept = data, kept
        if data is None and kept is None:
            raise TypeError("a table's rows, or how to read the kept ones")

    @property
    def data(self) -> TableData:
        if self._data is None:
            assert self._kept is not None  # one of the two: __init__
            self._data = self._kept()
        return self._data

    @property
    def style(self) -> str:
        """The table's own style (without reading kept rows)."""
        return self.shown.style if self.shown is not None else self.data.style


class _Ordered:
    """JUBE's CompType: comparisons involving None or incomparable types are False."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:  # any value a row holds: compared as Python compares
        self.value = value

    def __lt__(self, other: _Ordered) -> bool:
        if self.value is None or other.value is None:
            return False
        try:
            return bool(self.value < other.value)
        except TypeError:
            return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Ordered) or self.value is None or other.value is None:
            return False
        try:
            return bool(self.value == other.value)
        except TypeError:
            return False

    __hash__ = None  # type: ignore[assignment]


def make_table(
    table: Table, rows: list[Row], units: dict[str, str], status: bool | None = None
) -> TableData:
    """Fill `table` from `rows` (already filtered). `status`: add the status column (default: when
    some row is not done; never for a database)."""
    keys = table_keys(table, units)
    formats = entry_formats(keys)
    return assemble(table, keys, [row_entry(table, formats, row) for row in rows], status)


def table_keys(table: Table, units: dict[str, str]) -> list[Key]:
    """The table's columns as keys (without the status column `assemble` may add)."""
    keys = []
    for col in table.columns:
        try:
            colw = int(col.colw) if col.colw else 0
        except ValueError:
            colw = 0
        keys.append(Key(col.name, col.title or None, col.format, colw, units.get(col.name, "")))
    return keys


def entry_formats(keys: list[Key]) -> list[tuple[str, str, tuple[bool, bool]]]:
    return [(key.name, key.format, _format_kind(key.format)) for key in keys]


# What one row gives a table, decided by the row alone (so a kept table can take it again, JSON):
# [sort values, typed values, cells, status, leaf id, whether any column exists]; a list of mixed
# positions because the analysis cache keeps it as JSON.
Entry = list[Any]


def row_entry(table: Table, formats: list[tuple[str, str, tuple[bool, bool]]], row: Row) -> Entry:
    """One row's part of the table. A sort key the row lacks becomes None in it (JUBE adds it), also
    for the later tables that share the row."""
    sort = _sort_values(table, row)
    values = [row.get(name) for name, _spec, _kind in formats]
    vals = [None if value is MISSING else value for value in values]
    cells = zip(values, formats, strict=True)
    texts = [_entry_text(value, spec, kind) for value, (_name, spec, kind) in cells]
    return [sort, vals, texts, row.status, row.leaf.id, _any_column(formats, values)]


def _sort_values(table: Table, row: Row) -> list[object]:
    """The row's values of the sort keys, a key it lacks added to it as None first."""
    for name in table.sort:
        if not row.has(name):
            row.extra[name] = None
    return [row.get(n, None) for n in table.sort]


def _entry_text(value: object, spec: str, kind: tuple[bool, bool]) -> str:
    if value is MISSING or value is None:
        return ""
    return format_value(spec, value, kind) if spec else text_of(value)


def _any_column(formats: list[tuple[str, str, tuple[bool, bool]]], values: list[object]) -> bool:
    """Whether the row has any column of the table but the status (else it is left out)."""
    named = zip(formats, values, strict=True)
    return any(value is not MISSING and name != STATUS for (name, _s, _k), value in named)


def assemble(
    table: Table,
    keys: list[Key],
    entries: list[Entry],
    status: bool | None = None,
    rebuilt: set[int] | None = None,
    placed: list[int] | None = None,
    order: list[int] | None = None,
) -> TableData:
    """The table from its rows' entries (in row order): sorted, the status column added when some
    row is not done, rows without any column left out. `rebuilt`: entry positions; `placed` receives
    the table rows they became; `order` the entry positions of the table's rows, in table order."""
    present = [i for i in _sorted_order(table, entries) if entries[i][5]]
    if order is not None:
        order += present
    if status is None:
        status = table.output == "table" and any(e[3] != "done" for e in entries)
    keys, named = _with_status_key(keys, status)
    _note_places(present, rebuilt, placed)
    data = TableData(
        table.name, table.style, table.separator, table.transpose, keys, [], [], [], []
    )
    for i in present:
        _append_row(data, entries[i], named, status)
    return data


def _sorted_order(table: Table, entries: list[Entry]) -> Sequence[int]:
    """The entries' positions in the table's sort order (stable: row order among equals)."""
    order: Sequence[int] = range(len(entries))
    if not table.sort:
        return order
    if _plainly_ordered(entries, len(table.sort)):
        return sorted(order, key=lambda i: entries[i][0])
    return sorted(order, key=lambda i: [_Ordered(v) for v in entries[i][0]])


def _with_status_key(keys: list[Key], status: bool) -> tuple[list[Key], list[int]]:
    """The keys, a status column added when the rows show their status and no key is named so;
    and the places of the keys named so."""
    named = [i for i, key in enumerate(keys) if key.name == STATUS]
    if status and not named:
        return [*keys, Key(STATUS, None, "", 0)], named
    return list(keys), named


def _note_places(present: list[int], rebuilt: set[int] | None, placed: list[int] | None) -> None:
    """`placed` receives the table rows the `rebuilt` entries became."""
    if placed is not None and rebuilt is not None:
        placed += [place for place, i in enumerate(present) if i in rebuilt]


def _append_row(data: TableData, entry: Entry, named: list[int], status: bool) -> None:
    vals, texts = _status_shown(entry, data.keys, named, status)
    data.values.append(vals)
    data.cells.append(texts)
    data.statuses.append(entry[3])
    data.leaves.append(entry[4])


def _status_shown(
    entry: Entry, keys: list[Key], named: list[int], status: bool
) -> tuple[list[object], list[str]]:
    """A row's values and cells, showing its status where the table shows one: in the columns
    named status, else in the column added."""
    _sort, vals, texts, row_status, _leaf, _present = entry
    if not status:
        return vals, texts
    if not named:
        return [*vals, row_status], [*texts, row_status]
    vals, texts = list(vals), list(texts)
    for n in named:  # a column of the table is named status: it shows the row's status
        vals[n] = row_status
        spec = keys[n].format
        texts[n] = format_value(spec, row_status) if spec else text_of(row_status)
    return vals, texts


def _plainly_ordered(entries: list[Entry], width: int) -> bool:
    return plainly_ordered([entry[0] for entry in entries], width)


_NUMBERS = {int, bool, float}


def plainly_ordered(sort_values: Sequence[Sequence[object]], width: int) -> bool:
    """Whether rows' sort values compare as they are exactly as `_Ordered` compares them: each sort
    column all numbers without nan, or all texts (no None, no mixed types, no subclasses). The
    types are gathered at C speed: a table of 10,000 rows is checked on every change of a log."""
    for column in range(width):
        values = [row[column] for row in sort_values]
        kinds = set(map(type, values))
        if kinds == {str}:
            continue
        if not kinds <= _NUMBERS or (float in kinds and any(v != v for v in values)):
            return False
    return True


def _format_kind(spec: str) -> tuple[bool, bool]:
    """Whether a format spec holds integer codes, and float codes."""
    return any(c in spec for c in "dbcoxX"), any(c in spec for c in "eEfFgG")


# `value`: a row's typed value, converted as the spec's codes say where it can be (TypeError caught)
def format_value(spec: str, value: Any, kind: tuple[bool, bool] | None = None) -> str:
    """JUBE's format_value: integer codes convert to int, float codes to float; a value that does
    not convert is shown as it is (JUBE stops with a traceback). `kind`: `_format_kind(spec)`, if
    known."""
    int_codes, float_codes = kind or _format_kind(spec)
    try:
        if int_codes and not isinstance(value, int):
            value = int(float(value))
        elif float_codes and not isinstance(value, float):
            value = float(value)
        return format(value, spec)
    except (ValueError, TypeError, OverflowError):
        return text_of(value)


def render(data: TableData, style: str | None = None) -> str:
    """The table as text. JUBE's styles (csv, pretty, aligned) reproduce its output; markdown and
    json are caramel's. Like JUBE, csv does not quote cells (see `clashes`)."""
    style = style or data.style
    if style == "json":
        return to_json(data)
    if style == "markdown":
        return _markdown(data)
    return text_table(data, style)


def text_table(data: TableData, style: str) -> str:
    entries, widths_min = _grid(data)
    # `pretty` joins with " | "; csv and aligned with the table's separator, "," when it has none
    separator = data.separator if data.separator is not None else ","
    if style == "csv":
        return _csv_text(entries, separator)
    widths = _column_widths(entries, widths_min)
    rows = [_entry_lines(entry, widths, style, separator) for entry in entries]
    if style != "pretty":
        return _joined(rows)  # aligned keeps JUBE's shape; the caption goes to stderr
    return _pretty(data, rows, widths)


def _pretty(data: TableData, rows: list[list[str]], widths: list[int]) -> str:
    """`pretty`: the table's name and caption above, a rule below the headings (not transposed)."""
    if not data.transpose:
        rows.insert(1, ["|-" + "-|-".join("-" * w for w in widths) + "-|"])
    return f"{data.name}:\n" + (f"{data.caption}\n" if data.caption else "") + _joined(rows)


def _joined(rows: list[list[str]]) -> str:
    return "\n".join(line for row in rows for line in row) + "\n"


def _grid(data: TableData) -> tuple[list[list[str]], list[int]]:
    """The headings and cells as rows of text (columns when the table is transposed), and each
    column's least width (`colw`; none when transposed)."""
    entries = [data.headings] + [list(r) for r in data.cells]
    if not data.transpose:
        return entries, [k.colw for k in data.keys]
    if entries[0]:
        entries = [list(col) for col in zip(*entries, strict=True)]
    return entries, []


def _csv_text(entries: list[list[str]], sep: str) -> str:
    """JUBE's csv: cells joined as they are, a newline in a cell written as a blank."""
    if "\n" in sep:
        lines = [sep.join(_quote(cell, sep) for cell in entry) for entry in entries]
    else:
        lines = [line.replace("\n", " ") for line in map(sep.join, entries)]
    return "\n".join(lines) + "\n"


def _column_widths(entries: list[list[str]], widths_min: list[int]) -> list[int]:
    """Each column's width: its longest line of text, at least its declared `colw`."""
    widths = [0] * max((len(e) for e in entries), default=0)
    for entry in entries:
        for i, cell in enumerate(entry):
            widths[i] = max(widths[i], *(len(line) for line in cell.splitlines() or [""]))
    for i, w in enumerate(widths_min[: len(widths)]):
        widths[i] = max(widths[i], w)
    return widths


def _entry_lines(entry: list[str], widths: list[int], style: str, separator: str) -> list[str]:
    """One row's lines: `pretty` shows a cell's lines one below the other (the first right-aligned,
    the others left), `aligned` a cell on one line."""
    pretty = style == "pretty"
    wrapped = [_cell_lines(cell, pretty) for cell in entry]
    height = max((len(w) for w in wrapped), default=1) or 1  # an empty cell: one line
    out = []
    for h in range(height):
        parts = [_padded(lines, h, width) for lines, width in zip(wrapped, widths, strict=False)]
        out.append("| " + " | ".join(parts) + " |" if pretty else separator.join(parts))
    return out


def _cell_lines(cell: str, pretty: bool) -> list[str]:
    return cell.splitlines() if pretty else [cell.replace("\n", " ")]


def _padded(lines: list[str], h: int, width: int) -> str:
    """The h-th line of a cell padded to its column's width."""
    text = lines[h] if h < len(lines) else ""
    return text.rjust(width) if h == 0 else text.ljust(width)


def _quote(cell: str, sep: str) -> str:
    """JUBE writes cells as they are (newlines become spaces), even when they hold the separator;
    caramel keeps that for identical output and `clashes` lets the caller warn about it."""
    return cell.replace("\n", " ")


def clashes(data: TableData) -> list[str]:
    """Headings of the columns whose csv cells hold the separator (such rows cannot be read
    back)."""
    sep = data.separator or ","
    bad = _holding(data.headings, sep)
    for row in data.cells:
        if sep in "\0".join(row):  # the rare row with a clash: find its columns
            bad |= _holding(row, sep)
    return [h for i, h in enumerate(data.headings) if i in bad]


def _holding(texts: list[str], sep: str) -> set[int]:
    """The places of the texts that hold the separator."""
    return {i for i, text in enumerate(texts) if sep in text}


def _markdown(data: TableData) -> str:
    caption = [f"*{_markdown_text(data.caption)}*", ""] if data.caption else []
    lines = [
        f"**{data.name}**",
        "",
        *caption,
        _markdown_row(data.headings),
        "|" + "|".join("---:" if num else "---" for num in _numeric_columns(data)) + "|",
    ]
    lines += [_markdown_row(row) for row in data.cells]
    return "\n".join(lines) + "\n"


def _markdown_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(_markdown_text(c) for c in cells) + " |"


def _numeric_columns(data: TableData) -> list[bool]:
    """Per column, whether it holds numbers (and no other value): markdown aligns it right."""
    if not data.values:
        return [False] * len(data.keys)
    return [_all_numbers(column) for column in zip(*data.values, strict=True)]


def _all_numbers(values: tuple[object, ...]) -> bool:
    return all(isinstance(v, (int, float)) or v is None for v in values) and any(
        v is not None for v in values
    )


def json_value(value: object) -> object:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def to_json(data: TableData) -> str:
    return json.dumps(table_dict(data), indent=1)


def table_dict(data: TableData) -> dict[str, object]:
    """A table as plain data: typed values (nan/inf as null), units and each row's provenance."""
    names = data.headings
    rows = []
    for vals, status, leaf in zip(data.values, data.statuses, data.leaves, strict=True):
        item = {name: json_value(v) for name, v in zip(names, vals, strict=True)}
        item.setdefault(STATUS, status)
        item["_workpackage"] = leaf
        rows.append(item)
    out: dict[str, object] = {
        "name": data.name,
        "columns": names,
        "units": {k.heading: k.unit for k in data.keys if k.unit},
        "rows": rows,
    }
    if data.caption:
        out["caption"] = data.caption
    return out


# where the rows' columns (values, cells, statuses, leaves) are in a table's record
RECORD_ROWS = slice(5, 9)


def table_data_record(data: TableData) -> list[object]:
    """A filled table as plain JSON data (the analysis cache keeps finished tables this way)."""
    return [
        data.name,
        data.style,
        data.separator,
        data.transpose,
        [[k.name, k.title, k.format, k.colw, k.unit] for k in data.keys],
        data.values,
        data.cells,
        data.statuses,
        data.leaves,
        data.config_columns,
        data.notes,
        data.caption,
    ]


def table_data_from_record(record: list[Any]) -> TableData:  # JSON's data, checked below
    """The table `table_data_record` wrote; ValueError (or TypeError) when it is anything else."""
    (
        name,
        style,
        separator,
        transpose,
        keys,
        values,
        cells,
        statuses,
        leaves,
        config_columns,
        notes,
        caption,
    ) = record
    data = TableData(
        str(name),
        str(style),
        str(separator),
        bool(transpose),
        [
            Key(str(n), None if t is None else str(t), str(f), int(w), str(u))
            for n, t, f, w, u in keys
        ],
        values,
        cells,
        statuses,
        leaves,
        config_columns,
        notes,
        str(caption),
    )
    width = len(data.keys)
    if (
        not (len(values) == len(cells) == len(statuses) == len(leaves))
        or any(len(v) != width or len(c) != width for v, c in zip(values, cells, strict=True))
        or not set(map(type, itertools.chain.from_iterable(cells))) <= {str}
    ):  # C speed: 80,000 cells on a large run
        raise ValueError("a kept table of another shape")
    return data
