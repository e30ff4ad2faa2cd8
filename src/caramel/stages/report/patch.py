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
from dataclasses import dataclass
from typing import Any

from caramel.stages.report.dataset import STATUS
from caramel.stages.report.keptrows import row_line
from caramel.stages.report.table import Entry, Key, TableData, assemble, plainly_ordered
from caramel.stages.spec.model import Table

# the entries in no table row, by position: their sort values and status
Hidden = dict[int, tuple[tuple[object, ...], str]]


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
    hidden: Hidden
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


def places_of(given: dict[int, Entry], order: list[int], sorts: int) -> Places:
    """The places of a table assembled from the entries `given` (by their position among the
    result's rows, in row order; the rows its filter left out not given); `order`: the table's rows
    as indices into the entries given, in table order (report.table.assemble's `order`); `sorts`:
    the table's sort keys."""
    numbered = list(given)
    positions = [numbered[k] for k in order]
    shown = set(positions)
    hidden = {p: (tuple(entry[0]), entry[3]) for p, entry in given.items() if p not in shown}
    if not sorts:
        return Places(positions, [], hidden)
    ordered = plainly_ordered([entry[0] for entry in given.values()], sorts)
    return Places(positions, [tuple(given[p][0]) for p in positions], hidden, ordered)


# a row made again as the patch puts it in: position, sort values, typed values, cells, status, leaf
_Line = tuple[int, tuple[object, ...], list[object], list[str], str, int]


def patch(
    table: Table,
    keys: list[Key],
    kept: tuple[TableData, Places, list[str]],
    new: dict[int, Entry | None],
) -> tuple[TableData, Places, Delta, list[str] | None] | None:
    """The kept table (with its places and its rows' lines: report.keptrows) with the rows at the
    positions of `new` made again (their new entries; None: left out by the filter): the table, its
    places, how it changed and its rows' lines (None: to be encoded); None where the kept table
    cannot give every entry (a column named status shows the status in place of its values). The
    kept rows stay where they are in the table's lists: the rows made again are taken out and put
    in (list operations in C), no kept row is touched unless the status column comes or goes. Sort
    values that are not plainly ordered (no total order: a row's place depends on all the others)
    have the table assembled again from every entry, as a full call assembles it."""
    kept_data, places, kept_lines = kept
    if not _patchable(table, len(keys), kept):
        return None
    added = len(kept_data.keys) == len(keys) + 1  # the status column the kept table showed
    rows = _Rows.of(kept_data, places, kept_lines, bool(table.sort))
    width = len(keys) if added else None
    before = rows.take_out(set(new), width)
    hidden = {p: found for p, found in places.hidden.items() if p not in new}
    fresh = _fresh(new, hidden)
    if table.sort and not (
        places.ordered and _plainly_sorted(len(table.sort), rows.sorts, fresh, hidden)
    ):
        return _assembled_again(table, keys, rows.entries(width), fresh, hidden, before)
    shown = table.output == "table" and _some_not_done(rows.statuses, fresh, hidden)
    rows.show_status(added, shown, len(keys))
    for line in fresh:
        rows.put_in(line, shown, bool(table.sort))
    data = TableData(table.name, table.style, table.separator, table.transpose, list(keys), [], [])
    data.values, data.cells, data.statuses, data.leaves = (
        rows.values,
        rows.cells,
        rows.statuses,
        rows.leaves,
    )
    if shown:
        data.keys.append(Key(STATUS, None, "", 0))
    made_again = {line[0] for line in fresh}
    after = [place for place, position in enumerate(rows.positions) if position in made_again]
    places = Places(rows.positions, rows.sorts, hidden)
    return data, places, Delta(before, after), rows.encoded()


def _patchable(table: Table, width: int, kept: tuple[TableData, Places, list[str]]) -> bool:
    """Whether the kept table gives every entry: no column named status, the kept table of this
    table's columns (the status column added or not), with its rows' places and lines."""
    data, places, lines = kept
    rows = len(data.values)
    return (
        STATUS not in (c.name for c in table.columns)
        and len(data.keys) in (width, width + 1)
        and len(places.positions) == rows == len(lines)
    )


def _assembled_again(
    table: Table,
    keys: list[Key],
    given: dict[int, Entry],
    fresh: list[_Line],
    hidden: Hidden,
    before: list[tuple[list[object], str]],
) -> tuple[TableData, Places, Delta, None]:
    """The table assembled from every entry: the kept rows' (`given`), the rows made again
    (`fresh`) and those in no table row (`hidden`: only their sort values and status count), in
    row order, as a full call assembles them."""
    for position, (sort, status) in hidden.items():
        given[position] = [list(sort), [], [], status, 0, False]
    for position, sort, vals, texts, status, leaf in fresh:
        given[position] = [list(sort), vals, texts, status, leaf, True]
    given = dict(sorted(given.items()))
    made_again = {line[0] for line in fresh}
    rebuilt = {k for k, position in enumerate(given) if position in made_again}
    order: list[int] = []
    after: list[int] = []
    data = assemble(table, keys, list(given.values()), None, rebuilt, after, order)
    return data, places_of(given, order, len(table.sort)), Delta(before, after), None


@dataclass
class _Rows:
    """A table's rows as parallel lists, taken from the kept table and patched in place; a row's
    line None where it is to be encoded (report.keptrows)."""

    positions: list[int]
    sorts: list[tuple[object, ...]]  # empty without a sort
    values: list[list[object]]
    cells: list[list[str]]
    statuses: list[str]
    leaves: list[int]
    lines: list[str | None]

    @classmethod
    def of(cls, data: TableData, places: Places, lines: list[str], sorted_: bool) -> _Rows:
        return cls(
            list(places.positions),
            list(places.sorts) if sorted_ else [],
            list(data.values),
            list(data.cells),
            list(data.statuses),
            list(data.leaves),
            list(lines),
        )

    def _columns(self) -> list[list[Any]]:
        columns: list[list[Any]] = [self.positions, self.values, self.cells, self.statuses]
        columns += [self.leaves, self.lines]
        return columns + ([self.sorts] if self.sorts else [])

    def take_out(self, gone: set[int], width: int | None) -> list[tuple[list[object], str]]:
        """The rows at the positions `gone` taken out: their typed values (without the status
        column where the table showed one: `width`, its columns) and status, in position order."""
        found = [k for k, position in enumerate(self.positions) if position in gone]
        found.sort(key=self.positions.__getitem__)
        out = [(self.values[k][:width], self.statuses[k]) for k in found]
        for k in sorted(found, reverse=True):
            for column in self._columns():
                del column[k]
        return out

    def show_status(self, added: bool, shown: bool, width: int) -> None:
        """The status column put on every row or taken off, where it comes or goes."""
        if added == shown:
            return
        if shown:
            self.values = [[*v, s] for v, s in zip(self.values, self.statuses, strict=True)]
            self.cells = [[*c, s] for c, s in zip(self.cells, self.statuses, strict=True)]
        else:
            self.values = [v[:width] for v in self.values]
            self.cells = [c[:width] for c in self.cells]
        self.lines = [None] * len(self.lines)

    def put_in(self, line: _Line, shown: bool, sorted_: bool) -> None:
        """A row made again, where its sort values, then its position, put it (the assembly's
        stable sort of the entries in row order); a table without sort in row order."""
        position, sort, vals, texts, status, leaf = line
        if sorted_:
            key = (sort, position)
            k = bisect.bisect(
                range(len(self.positions)), key, key=lambda j: (self.sorts[j], self.positions[j])
            )
            self.sorts.insert(k, sort)
        else:
            k = bisect.bisect(self.positions, position)
        self.positions.insert(k, position)
        self.values.insert(k, [*vals, status] if shown else vals)
        self.cells.insert(k, [*texts, status] if shown else texts)
        self.statuses.insert(k, status)
        self.leaves.insert(k, leaf)
        self.lines.insert(k, None)

    def entries(self, width: int | None) -> dict[int, Entry]:
        """The rows' entries by position (report.table.row_entry's), the status column the
        table showed (`width`: its columns) left out."""
        sorts = self.sorts if self.sorts else [()] * len(self.positions)
        rows = zip(
            self.positions, sorts, self.values, self.cells, self.statuses, self.leaves, strict=True
        )
        return {
            position: [list(sort), vals[:width], texts[:width], status, leaf, True]
            for position, sort, vals, texts, status, leaf in rows
        }

    def encoded(self) -> list[str]:
        """Every row's line, those of the rows made again (or all, the status column changed)
        encoded."""
        rows = zip(self.lines, self.values, self.cells, self.statuses, self.leaves, strict=True)
        return [
            line if line is not None else row_line(values, cells, status, leaf)
            for line, values, cells, status, leaf in rows
        ]


def _fresh(new: dict[int, Entry | None], hidden: Hidden) -> list[_Line]:
    """The lines of the new entries that have some column of the table; the others join
    `hidden`."""
    fresh: list[_Line] = []
    for position in sorted(new):
        entry = new[position]
        if entry is None:
            continue
        sort, vals, texts, status, leaf, present = entry
        if present:
            fresh.append((position, tuple(sort), vals, texts, status, leaf))
        else:
            hidden[position] = (tuple(sort), status)
    return fresh


def _plainly_sorted(
    width: int, sorts: list[tuple[object, ...]], fresh: list[_Line], hidden: Hidden
) -> bool:
    """Whether every entry's sort values are plainly ordered (report.table.plainly_ordered)."""
    every = itertools.chain(sorts, (line[1] for line in fresh), (s for s, _st in hidden.values()))
    return plainly_ordered(list(every), width)


def _some_not_done(statuses: list[str], fresh: list[_Line], hidden: Hidden) -> bool:
    """Whether some entry is not done: the table shows a status column (report.table.assemble)."""
    others = itertools.chain((line[4] for line in fresh), (st for _s, st in hidden.values()))
    return bool((set(statuses) | set(others)) - {"done"})
