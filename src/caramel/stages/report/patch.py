"""A kept table patched where rows were made again: the rest of the table stays as it was.

    patched = patch(table, keys, kept_table, places, {position: entry, ...})   # None: no patch

report.incremental keeps, beside each table it made, where each table row came from (`Places`: its
position among the result's rows and its sort values) and the entries that are in no table row but
count for the status column (a row without any of the table's columns). After a few rows were made
again, the kept table loses their rows and each new entry is put in its place by its sort values and
position, which is where a full assembly (report.table.assemble: a stable sort of the entries in
row order) puts it; the status column comes or goes as that assembly decides. Where the sort values
are not plainly ordered (None, nan, mixed types: JUBE's CompType compares those, no total order,
so a row's place depends on every other row) or a column is named status, there is no patch: the
caller makes the table whole.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from caramel.stages.report.dataset import STATUS
from caramel.stages.report.keptrows import row_line
from caramel.stages.report.table import Entry, Key, TableData, plainly_ordered
from caramel.stages.spec.model import Table


@dataclass
class Delta:
    """How one table changed since the kept one: the rows made again, before (typed values and
    status of those that were in the table) and after (their places in the new table)."""

    before: list[tuple[list[object], str]]
    after: list[int]


@dataclass
class Places:
    """Where a table's rows came from: per table row, its position among the result's rows and its
    sort values (none when the table has no sort); and the entries in no table row, by position:
    their sort values and status. The sort values are tuples (kept as one list a sort key)."""

    positions: list[int]
    sorts: list[tuple[object, ...]]
    hidden: dict[int, tuple[tuple[object, ...], str]]
    # the rows are in the order of their sort values, then positions: the table was sorted by
    # plainly ordered values (a sort by CompType over a None leaves the others in no such order)
    ordered: bool = True

    def record(self) -> list[Any]:
        """As JSON keeps it."""
        hidden = [[position, sort, status] for position, (sort, status) in self.hidden.items()]
        columns = [list(column) for column in zip(*self.sorts, strict=True)]  # none without rows
        return [self.positions, columns, hidden, self.ordered]

    @classmethod
    def from_record(cls, record: Any, rows: int, sorts: int) -> Places | None:
        """The places `record` wrote, for a kept table of `rows` rows and `sorts` sort keys; None
        for anything else (JSON's data from a file anyone may have written)."""
        try:
            positions, columns, hidden, ordered = record
            if type(columns) is not list or not _columns_fit(columns, rows, sorts):
                return None
            places = cls(
                positions,
                list(zip(*columns, strict=True)),
                {int(p): (tuple(sort), str(status)) for p, sort, status in hidden},
                ordered is True,
            )
        except (ValueError, TypeError):
            return None
        if not _fits(places, rows, sorts):
            return None
        return places


def _columns_fit(columns: list[Any], rows: int, sorts: int) -> bool:
    """Whether kept sort values are one list of `rows` values a sort key (none without a sort)."""
    if not sorts or not rows:
        return not columns
    return len(columns) == sorts and all(type(c) is list and len(c) == rows for c in columns)


def _fits(places: Places, rows: int, sorts: int) -> bool:
    """Whether the places are of a table of `rows` rows and `sorts` sort keys: one distinct
    position and (with a sort) one list of sort values a row."""
    positions, sort_values = places.positions, places.sorts
    if type(positions) is not list or type(sort_values) is not list or len(positions) != rows:
        return False
    if set(map(type, positions)) - {int} or len(set(positions)) != rows:
        return False
    if sorts and len(sort_values) != rows:
        return False
    return all(len(sort) == sorts for sort, _status in places.hidden.values())


def places_of(entries: list[Entry | None], order: list[int], sorts: int) -> Places:
    """The places of a table assembled from `entries` (one per row of the result, None: left out
    by the table's filter); `order`: the table's rows as indices into the entries given to the
    assembly (those not None), in table order (report.table.assemble's `order`); `sorts`: the
    table's sort keys."""
    given = {position: entry for position, entry in enumerate(entries) if entry is not None}
    numbered = list(given)
    positions = [numbered[k] for k in order]
    shown = set(positions)
    hidden = {p: (tuple(entry[0]), entry[3]) for p, entry in given.items() if p not in shown}
    if not sorts:
        return Places(positions, [], hidden)
    ordered = plainly_ordered([entry[0] for entry in given.values()], sorts)
    return Places(positions, [tuple(given[p][0]) for p in positions], hidden, ordered)


# a table row as the patch handles it: position, sort values, typed values, cells, status, leaf,
# and its line as kept (report.keptrows; None: a row made again)
_Line = tuple[int, tuple[object, ...], list[object], list[str], str, int, str | None]


def patch(
    table: Table,
    keys: list[Key],
    kept: tuple[TableData, Places, list[str]],
    new: dict[int, Entry | None],
) -> tuple[TableData, Places, Delta, list[str]] | None:
    """The kept table (with its places and its rows' lines: report.keptrows) with the rows at the
    positions of `new` made again (their new entries; None: left out by the filter): the table, its
    places, how it changed and its rows' lines; None where no patch is exact."""
    kept_data, places, kept_lines = kept
    added = len(kept_data.keys) == len(keys) + 1  # the status column the kept table showed
    if not _patchable(table, len(keys), kept):
        return None
    lines, removed = _split(_lines(kept_data, places, kept_lines, table.sort), set(new))
    hidden = {p: found for p, found in places.hidden.items() if p not in new}
    fresh = _fresh(new, hidden)
    if not _plainly_sorted(table, lines, fresh, hidden):
        return None
    shown = table.output == "table" and _some_not_done(lines, fresh, hidden)
    for line in fresh:
        bisect.insort(lines, line, key=_place_key(table))
    data = _data(table, keys, lines, added, shown)
    made_again = {line[0] for line in fresh}
    after = [place for place, line in enumerate(lines) if line[0] in made_again]
    before = [(_without_status(line[2], added), line[4]) for line in removed]
    sorts = [line[1] for line in lines] if table.sort else []
    places = Places([line[0] for line in lines], sorts, hidden)
    return data, places, Delta(before, after), _row_lines(data, lines, added == shown)


def _patchable(table: Table, width: int, kept: tuple[TableData, Places, list[str]]) -> bool:
    """Whether the kept table can be patched: no column named status, the kept table of this
    table's columns (the status column added or not), in sorted order, with its rows' places and
    lines."""
    data, places, lines = kept
    rows = len(data.values)
    return (
        STATUS not in (c.name for c in table.columns)
        and len(data.keys) in (width, width + 1)
        and len(places.positions) == rows == len(lines)
        and places.ordered
    )


def _plainly_sorted(
    table: Table,
    lines: list[_Line],
    fresh: list[_Line],
    hidden: dict[int, tuple[tuple[object, ...], str]],
) -> bool:
    """Whether every entry's sort values are plainly ordered (report.table.plainly_ordered)."""
    if not table.sort:
        return True
    every = itertools.chain(
        (line[1] for line in itertools.chain(lines, fresh)), (s for s, _st in hidden.values())
    )
    return plainly_ordered(list(every), len(table.sort))


def _lines(kept: TableData, places: Places, texts: list[str], sort: list[str]) -> list[_Line]:
    positions = places.positions
    sorts = places.sorts if sort else [()] * len(positions)
    columns = (kept.values, kept.cells, kept.statuses, kept.leaves, texts)
    return list(zip(positions, sorts, *columns, strict=True))


def _row_lines(data: TableData, lines: list[_Line], same_columns: bool) -> list[str]:
    """The rows' lines: a kept row's as kept where the table's columns are the same."""
    rows = zip(lines, data.values, data.cells, data.statuses, data.leaves, strict=True)
    return [
        line[6] if same_columns and line[6] is not None else row_line(values, cells, status, leaf)
        for line, values, cells, status, leaf in rows
    ]


def _split(lines: list[_Line], gone: set[int]) -> tuple[list[_Line], list[_Line]]:
    """The lines that stay, and those made again (in position order)."""
    removed = sorted((line for line in lines if line[0] in gone), key=lambda line: line[0])
    if not removed:
        return lines, removed
    return [line for line in lines if line[0] not in gone], removed


def _fresh(
    new: dict[int, Entry | None], hidden: dict[int, tuple[tuple[object, ...], str]]
) -> list[_Line]:
    """The lines of the new entries that have some column of the table; the others join
    `hidden`."""
    fresh: list[_Line] = []
    for position in sorted(new):
        entry = new[position]
        if entry is None:
            continue
        sort, vals, texts, status, leaf, present = entry
        if present:
            fresh.append((position, tuple(sort), vals, texts, status, leaf, None))
        else:
            hidden[position] = (tuple(sort), status)
    return fresh


def _some_not_done(
    lines: list[_Line], fresh: list[_Line], hidden: dict[int, tuple[tuple[object, ...], str]]
) -> bool:
    """Whether some entry is not done: the table shows a status column (report.table.assemble)."""
    statuses = itertools.chain(
        (line[4] for line in itertools.chain(lines, fresh)), (st for _s, st in hidden.values())
    )
    return bool(set(statuses) - {"done"})


def _place_key(table: Table) -> Callable[[_Line], Any]:
    """Where a line goes: by its sort values, rows of equal ones in row order (the assembly's
    stable sort of the entries in row order); a table without sort in row order."""
    if table.sort:
        return lambda line: (line[1], line[0])
    return lambda line: line[0]


def _data(table: Table, keys: list[Key], lines: list[_Line], added: bool, shown: bool) -> TableData:
    """The table of the lines, a status column added when `shown` (the kept lines hold one where
    the kept table showed it: `added`)."""
    data = TableData(
        table.name, table.style, table.separator, table.transpose, list(keys), [], [], [], []
    )
    if shown:
        data.keys.append(Key(STATUS, None, "", 0))
    width = len(keys)
    for _position, _sort, vals, texts, status, leaf, _line in lines:
        if shown and len(vals) == width:  # a kept line of a table without it, or a new one
            vals, texts = [*vals, status], [*texts, status]
        elif not shown and added and len(vals) > width:
            vals, texts = vals[:width], texts[:width]
        data.values.append(vals)
        data.cells.append(texts)
        data.statuses.append(status)
        data.leaves.append(leaf)
    return data


def _without_status(vals: list[object], added: bool) -> list[object]:
    return vals[:-1] if added else vals
