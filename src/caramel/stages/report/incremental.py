"""Tables made again row by row: after a few logs changed, only the rows that read them.

`bench result` keeps, besides its finished tables (report.results), what their rows were made from:
each row's leaf (its analyser and result group) and the workpackages it depends on (its chain and
the members of the result groups along it), a digest of every result group's file signature, every
workpackage's state and reason, and for each table where its rows came from (report.patch.Places).
The next call compares: a row is made again when one of the workpackages it depends on changed
state or belongs to a result group whose files changed; only the result groups of those rows are
read from the analysis cache (or analysed). The finished tables the kept rows made are then patched
(report.patch): those rows taken out, their new entries put where a full assembly puts them, so the
output is the same byte for byte (tests/stages/report/test_incremental.py compares with a full
call). A table no patch makes exactly is made whole, every row from the cache.

The record is JSON (`rows` of analyse.db), keyed by the shape of the run (report.keys: definitions,
workpackages and result groups, `--only`); one that does not decode or does not fit, or whose
finished tables are no longer kept, is a miss: a full call.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from caramel.stages.analyse.analyser import AnalyserResult, Group, Prepared, run
from caramel.stages.analyse.cache import AnalysisCache
from caramel.stages.analyse.derived import Problem
from caramel.stages.analyse.inputs import AnalysisInput
from caramel.stages.report.dataset import (
    Row,
    keep,
    make_row,
    row_depends,
    row_leaves,
    units,
)
from caramel.stages.report.patch import Delta, Places, patch, places_of
from caramel.stages.report.table import (
    Entry,
    Key,
    TableData,
    assemble,
    entry_formats,
    row_entry,
    table_keys,
)
from caramel.stages.spec.model import Result, Table
from caramel.stages.state import bounded


@dataclass
class Built:
    tables: list[tuple[Result, Table, TableData]]
    for_notes: dict[
        str, AnalyserResult
    ]  # the groups that have warnings, per analyser, in group order
    record: str  # JSON to keep for the next call
    deltas: list[Delta | None] | None  # per table; None: everything was made (no kept rows)
    base_key: str | None  # the key of the tables the kept rows made (report.results._key)
    scanned: int
    reused: int
    lines: list[list[str] | None]  # per table, its rows' lines where a patch kept them (keptrows)


# per analyser, per result group's root: its warnings, [problems, dropped] as JSON keeps them
Notes = dict[str, dict[str, list[Any]]]
TableRows = list[tuple[Result, Table, TableData]]


@dataclass
class _Kept:
    key: str
    digests: dict[str, list[str]]
    states: list[str]  # each workpackage's state and reason (_Now.states)
    notes: Notes
    leaves: list[list[list[Any]]]  # per result: [analyser, root] of each row (JSON: a list)
    deps: list[list[list[int]]]  # per result, per row
    places: list[Any]  # per table, its Places as the record keeps them
    # per table, the table made with these rows (report.results keeps it under `key`), its places
    tables: list[tuple[TableData, Places, list[str]]] = field(default_factory=list)
    changed: set[int] = field(default_factory=set)  # workpackages whose group or state changed


def selected(inp: AnalysisInput, only: list[str] | None) -> list[tuple[Result, list[Table]]]:
    """The results and their tables made, in file order (syslog tables are skipped by the
    caller)."""
    out = []
    for result in inp.benchmark.results:
        tables = _chosen(result, only)
        if only is not None and not tables:
            continue  # its analysers are not run (report.results.analyser_names)
        _warn_of_syslogs(tables)
        out.append((result, [t for t in tables if t.output != "syslog"]))
    return out


def _chosen(result: Result, only: list[str] | None) -> list[Table]:
    return [t for t in result.tables if only is None or t.name in only]


def _warn_of_syslogs(tables: list[Table]) -> None:
    for table in tables:
        if table.output == "syslog":
            print(
                f'warning: <syslog name="{table.name}"> is not supported by caramel; skipped',
                file=sys.stderr,
            )


@dataclass
class _Now:
    """The run as it is now: each result group's file digest (per analyser, in plan order), each
    workpackage's state and reason, and each result group's members (per analyser, by root)."""

    digests: dict[str, list[str]]
    states: list[str]  # "STATE REASON" (a state is one word): one text a workpackage, no list
    members: dict[str, dict[int, list[int]]]


def _now(inp: AnalysisInput, prepared: list[Prepared]) -> _Now:
    return _Now(
        {p.name: [_digest(signature) for _m, signature, _r in p.plans] for p in prepared},
        [f"{wp.state} {wp.reason}" for wp in inp.workpackages],
        {p.name: {m[0].id: [w.id for w in m] for m, _s, _r in p.plans} for p in prepared},
    )


@dataclass
class _Work:
    """What this call makes: every row's leaf ([analyser, root]) per result, the positions of the
    rows made again per result, the analysers' results and the warnings kept per result group."""

    leaves: list[list[list[Any]]]
    todo: list[list[int]]
    analysed: dict[str, AnalyserResult]
    notes: Notes


def _everything(
    inp: AnalysisInput,
    prepared: list[Prepared],
    cache: AnalysisCache | None,
    results: list[tuple[Result, list[Table]]],
    members: dict[str, dict[int, list[int]]],
) -> _Work:
    """No kept rows: every row of every result made, every analyser run."""
    leaves = [
        [[name, root] for name, root in row_leaves(inp, members, result.uses)]
        for result, _t in results
    ]
    todo = [list(range(len(rows))) for rows in leaves]
    return _Work(leaves, todo, {p.name: run(p, cache) for p in prepared}, {})


def _changed_rows(
    prepared: list[Prepared],
    cache: AnalysisCache | None,
    kept: _Kept,
    members: dict[str, dict[int, list[int]]],
) -> _Work:
    """Kept rows that fit: only the rows depending on a changed workpackage made again, only the
    result groups they read analysed (or taken from the cache)."""
    todo = [
        [i for i, deps in enumerate(per) if not kept.changed.isdisjoint(deps)] for per in kept.deps
    ]
    needed = _needed_groups(prepared, kept, todo, members)
    analysed = {p.name: run(p, cache, needed[p.name]) for p in prepared}
    notes = {name: dict(per) for name, per in kept.notes.items()}
    return _Work(kept.leaves, todo, analysed, notes)


def _needed_groups(
    prepared: list[Prepared],
    kept: _Kept,
    todo: list[list[int]],
    members: dict[str, dict[int, list[int]]],
) -> dict[str, set[int]]:
    """Per analyser, the roots of the result groups to read: those the rows made again depend on,
    and those whose files or states changed."""
    needed = {p.name: _changed_roots(p, kept.changed) for p in prepared}
    for r, positions in enumerate(todo):
        for i in positions:
            name = kept.leaves[r][i][0]
            needed[name].update(members[name].keys() & kept.deps[r][i])
    return needed


def _changed_roots(prepared: Prepared, changed: set[int]) -> set[int]:
    """The roots of the analyser's result groups whose root changed."""
    return {members[0].id for members, _s, _r in prepared.plans if members[0].id in changed}


def _update_notes(notes: Notes, analysed: dict[str, AnalyserResult]) -> None:
    """The warnings of each result group read now replace the kept ones (none: dropped)."""
    for name, result in analysed.items():
        per = notes.setdefault(name, {})
        for root, group in result.groups.items():
            if group.problems or group.dropped:
                per[str(root)] = _encode_notes(group)
            else:
                per.pop(str(root), None)


# the tables kept under a key (report.results): the kept rows' tables are read only after a change
KeptTables = Callable[[str], list[tuple[TableData, list[str]]] | None]


def build(
    inp: AnalysisInput,
    only: list[str] | None,
    prepared: list[Prepared],
    cache: AnalysisCache | None,
    kept_text: str | None,
    key: str = "",
    kept_tables: KeptTables | None = None,
) -> Built:
    """The selected tables: the kept ones patched where the kept rows fit (`kept_text`, and the
    tables they made: `kept_tables`), else all made. `key`: the key of the tables made now, kept
    with the rows."""
    now = _now(inp, prepared)
    results = selected(inp, only)
    kept = _decode(kept_text, inp, prepared, results, now, kept_tables)
    made = None
    if kept is not None:
        work = _changed_rows(prepared, cache, kept, now.members)
        made = _patched(inp, results, work, now.members, kept)
    if made is None:  # no kept rows, or a table no patch makes exactly: every row made
        kept = None
        work = _everything(inp, prepared, cache, results, now.members)
        made = _tables(inp, results, work, now.members)
    _update_notes(work.notes, work.analysed)
    record = json.dumps(
        {
            "k": key,
            "d": now.digests,
            "s": now.states,
            "n": work.notes,
            "l": work.leaves,
            "p": made.deps,
            "w": [found.record() for found in made.places],
        },
        separators=(",", ":"),
    )
    scanned = sum(a.scanned for a in work.analysed.values())
    return Built(
        made.tables,
        _note_results(prepared, work.notes),
        record,
        None if kept is None else made.deltas,
        None if kept is None else kept.key,
        scanned,
        sum(len(p.plans) for p in prepared) - scanned,
        made.lines,
    )


@dataclass
class _Remade:
    """The rows of one result made again: every row's leaf ([analyser, root]), the positions made
    again and their rows."""

    leaves: list[list[Any]]
    positions: list[int]
    rows: dict[int, Row]


def _remade(inp: AnalysisInput, work: _Work, r: int) -> _Remade:
    leaves, positions = work.leaves[r], work.todo[r]
    rows = {i: make_row(inp, work.analysed[leaves[i][0]].groups, *leaves[i]) for i in positions}
    return _Remade(leaves, positions, rows)


def _row_deps(
    kept: _Kept | None, r: int, remade: _Remade, members: dict[str, dict[int, list[int]]]
) -> list[list[int]]:
    """Per row of result r, the workpackages it depends on: the kept ones, the remade rows' anew."""
    deps = list(kept.deps[r]) if kept else [[] for _ in remade.leaves]
    for i, row in remade.rows.items():
        deps[i] = row_depends(row, members[row.analyser])
    return deps


@dataclass
class Assembled:
    """The tables made, their places, each row's dependencies per result, how each table changed
    (None: made whole) and its rows' lines where a patch kept them."""

    tables: TableRows = field(default_factory=list)
    places: list[Places] = field(default_factory=list)
    deps: list[list[list[int]]] = field(default_factory=list)
    deltas: list[Delta | None] = field(default_factory=list)
    lines: list[list[str] | None] = field(default_factory=list)


def _tables(
    inp: AnalysisInput,
    results: list[tuple[Result, list[Table]]],
    work: _Work,
    members: dict[str, dict[int, list[int]]],
) -> Assembled:
    """Every selected table assembled from every row's entry."""
    made = Assembled()
    for r, (result, selected_tables) in enumerate(results):
        remade = _remade(inp, work, r)
        made.deps.append(_row_deps(None, r, remade, members))
        for table in selected_tables:
            keys = _keys(inp, result, table, work.analysed)
            formats = entry_formats(keys)
            entries = [
                _entry(inp, table, formats, work.analysed, remade, i) for i in remade.positions
            ]
            order: list[int] = []
            data = assemble(table, keys, [e for e in entries if e is not None], order=order)
            made.tables.append((result, table, data))
            given = {position: entry for position, entry in enumerate(entries) if entry is not None}
            made.places.append(places_of(given, order, len(table.sort)))
            made.deltas.append(None)
            made.lines.append(None)
    return made


def _patched(
    inp: AnalysisInput,
    results: list[tuple[Result, list[Table]]],
    work: _Work,
    members: dict[str, dict[int, list[int]]],
    kept: _Kept,
) -> Assembled | None:
    """The kept tables with the rows made again patched in (report.patch); None where a table
    cannot be patched exactly."""
    made = Assembled()
    for r, (result, selected_tables) in enumerate(results):
        remade = _remade(inp, work, r)
        made.deps.append(_row_deps(kept, r, remade, members))
        for table in selected_tables:
            keys = _keys(inp, result, table, work.analysed)
            formats = entry_formats(keys)
            new = {
                i: _entry(inp, table, formats, work.analysed, remade, i) for i in remade.positions
            }
            patched = patch(table, keys, kept.tables[len(made.tables)], new)
            if patched is None:
                return None
            data, places, delta, lines = patched
            made.tables.append((result, table, data))
            made.places.append(places)
            made.deltas.append(delta)
            made.lines.append(lines)
    return made


def _keys(
    inp: AnalysisInput, result: Result, table: Table, analysed: dict[str, AnalyserResult]
) -> list[Key]:
    names = [c.name for c in table.columns]
    return table_keys(table, units(inp, analysed, result.uses, names))


def _entry(
    inp: AnalysisInput,
    table: Table,
    formats: list[tuple[str, str, tuple[bool, bool]]],
    analysed: dict[str, AnalyserResult],
    remade: _Remade,
    i: int,
) -> Entry | None:
    """Row i's entry in the table; None where the table's filter leaves it out."""
    if not table.filter:
        return row_entry(table, formats, remade.rows[i])
    # a filtered table reads rows of its own, as build_rows makes them
    fresh = make_row(inp, analysed[remade.leaves[i][0]].groups, *remade.leaves[i])
    return row_entry(table, formats, fresh) if keep(fresh, table.filter, table.where) else None


def _digest(signature: str) -> str:
    return hashlib.blake2b(signature.encode(), digest_size=12).hexdigest()


def _encode_notes(group: Group) -> list[object]:
    return [
        [[p.pattern.name, p.expression, p.wp_id, p.message] for p in group.problems],
        {name: list(entry) for name, entry in group.dropped.items()},
    ]


def _note_results(prepared: list[Prepared], notes: Notes) -> dict[str, AnalyserResult]:
    """Results holding only the groups with warnings (in group order): what report.results.warnings
    reads."""
    out = {}
    for p in prepared:
        per = notes.get(p.name, {})
        groups = {}
        for members, _s, _r in p.plans:
            entry = per.get(str(members[0].id))
            if entry is not None:
                problems, dropped = entry
                groups[members[0].id] = Group(
                    members[0].id,
                    [],
                    problems=[
                        Problem(p.every[name], expression, wp_id, message)
                        for name, expression, wp_id, message in problems
                    ],
                    dropped={name: (count, first) for name, (count, first) in dropped.items()},
                )
        out[p.name] = AnalyserResult(p.name, [], groups, p.every)
    return out


def _decode(
    text: str | None,
    inp: AnalysisInput,
    prepared: list[Prepared],
    results: list[tuple[Result, list[Table]]],
    now: _Now,
    kept_tables: KeptTables | None,
) -> _Kept | None:
    """The kept rows and the tables they made, checked against the run's shape; None (a miss)
    when they do not fit."""
    if text is None or kept_tables is None:
        return None
    try:
        data = bounded.loads(text, "the kept rows", max_bytes=bounded.CACHE_BYTES)
        kept = _Kept(
            str(data["k"]), data["d"], data["s"], data["n"], data["l"], data["p"], data["w"]
        )
        if not _fits_today(kept, inp, prepared, results, now):
            return None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return kept if _with_tables(kept, results, kept_tables(kept.key)) else None


def _with_tables(
    kept: _Kept,
    results: list[tuple[Result, list[Table]]],
    tables: list[tuple[TableData, list[str]]] | None,
) -> bool:
    """Whether the tables the kept rows made are there, with their places: then kept with them."""
    chosen = [table for _result, selected_tables in results for table in selected_tables]
    if tables is None or len(tables) < len(chosen) or len(kept.places) != len(chosen):
        return False
    for table, (data, lines), record in zip(chosen, tables, kept.places, strict=False):
        places = Places.from_record(record, len(data.values), len(table.sort))
        if places is None or data.name != table.name:
            return False
        kept.tables.append((data, places, lines))
    return True


def _fits_today(
    kept: _Kept,
    inp: AnalysisInput,
    prepared: list[Prepared],
    results: list[tuple[Result, list[Table]]],
    now: _Now,
) -> bool:
    """Whether the kept rows fit the run as it is now, the workpackages that changed since marked
    (their result group's files or their state)."""
    if not _shape_fits(kept, results, now.digests, now.states):
        return False
    if not _mark_changed(kept, prepared, now.digests):
        return False
    changed = zip(inp.workpackages, kept.states, now.states, strict=True)
    kept.changed.update(wp.id for wp, before, state in changed if before != state)
    return _rows_fit(kept, results, now.digests)


def _shape_fits(
    kept: _Kept,
    results: list[tuple[Result, list[Table]]],
    digests: dict[str, list[str]],
    states: list[str],
) -> bool:
    """Whether the kept rows are of today's analysers, workpackages and results."""
    return (
        set(kept.digests) == set(digests)
        and len(kept.states) == len(states)
        and len(kept.leaves) == len(results)
        and len(kept.deps) == len(results)
        and not set(kept.notes) - set(digests)
    )


def _mark_changed(kept: _Kept, prepared: list[Prepared], digests: dict[str, list[str]]) -> bool:
    """The members whose files changed since the rows were kept, marked; False where the kept
    digests or notes do not fit the analysers of today."""
    for p in prepared:
        if len(kept.digests[p.name]) != len(p.plans) or not _notes_known(kept.notes[p.name], p):
            return False
    for p in prepared:
        kept.changed.update(_changed_members(p, kept.digests[p.name], digests[p.name]))
    return True


def _notes_known(notes: dict[str, list[Any]], prepared: Prepared) -> bool:
    """Whether every pattern the kept warnings name is one of the analyser's."""
    problems = (problem for entry in notes.values() for problem in entry[0])
    return all(name in prepared.every for name, _expression, _wp, _message in problems)


def _changed_members(prepared: Prepared, before: list[str], now: list[str]) -> set[int]:
    """The members of the result groups whose file digests differ."""
    plans = zip(prepared.plans, before, now, strict=True)
    return {m.id for (members, _s, _r), old, new in plans if old != new for m in members}


def _rows_fit(
    kept: _Kept, results: list[tuple[Result, list[Table]]], digests: dict[str, list[str]]
) -> bool:
    """Whether the kept rows are those of today's results: one leaf and dependencies a row, each
    leaf of today's analysers."""
    for r in range(len(results)):
        count = len(kept.leaves[r])
        if len(kept.deps[r]) != count or any(name not in digests for name, _root in kept.leaves[r]):
            return False
    return True
