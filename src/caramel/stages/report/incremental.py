"""Tables made again row by row: after a few logs changed, only the rows that read them.

`bench result` keeps, besides its finished tables, what each row gave each table (its entry: sort
values, typed values, cells, status, leaf; report.table.row_entry), the workpackages each row
depends on (its chain and the members of the result groups along it), a digest of every result
group's file signature and every workpackage's state. The next call compares: a row is made again
when one of the workpackages it depends on changed state or belongs to a result group whose files
changed; only the result groups of those rows are read from the analysis cache (or analysed); the
other rows keep their entries. Each table is then sorted and assembled from all entries exactly as
a full call assembles them, so the output is the same byte for byte
(tests/stages/report/test_incremental.py compares with --reanalyse).

The record is JSON (`rows` of analyse.db), keyed by the shape of the run (definitions, workpackages
and result groups, `--only`); one that does not decode or does not fit is a miss: a full call.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from caramel import __version__
from caramel.stages.analyse.analyser import AnalyserResult, Group, Prepared, run
from caramel.stages.analyse.cache import AnalysisCache
from caramel.stages.analyse.derived import Problem
from caramel.stages.analyse.inputs import AnalysisInput
from caramel.stages.report.dataset import STATUS, keep, make_row, row_depends, row_leaves, units
from caramel.stages.report.table import (
    Entry,
    TableData,
    assemble,
    entry_formats,
    row_entry,
    table_keys,
)
from caramel.stages.spec.model import Result, Table
from caramel.stages.state import bounded


@dataclass
class Delta:
    """How one table changed since the kept one: the rows made again, before (typed values and
    status of those that were in the table) and after (their places in the new table)."""

    before: list[tuple[list[object], str]]
    after: list[int]


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


# per analyser, per result group's root: its warnings, [problems, dropped] as JSON keeps them
Notes = dict[str, dict[str, list[Any]]]
TableRows = list[tuple[Result, Table, TableData]]


@dataclass
class _Kept:
    key: str
    digests: dict[str, list[str]]
    states: list[list[str]]
    notes: Notes
    leaves: list[list[list[Any]]]  # per result: [analyser, root] of each row (JSON: a list)
    deps: list[list[list[int]]]  # per result, per row
    entries: list[list[Entry | None]]  # per table, per row of its result; None: filtered out
    changed: set[int] = field(default_factory=set)  # workpackages whose group or state changed


def definitions(inp: AnalysisInput, prepared: list[Prepared], only: list[str] | None) -> bytes:
    """What every kept table or row depends on besides the files and states: caramel's version,
    the run, the selected results, the analysers' configuration, the parameters' units and the
    steps' sanity checks (a `performance:` table has no analyser to carry them)."""
    sanity = [(name, step.sanity) for name, step in inp.benchmark.steps.items() if step.sanity]
    return repr(
        (
            __version__,
            inp.run_dir,
            only,
            inp.benchmark.results,
            [p.config for p in prepared],
            sorted(inp.param_units().items()),
            sanity,
        )
    ).encode()


def shape_key(inp: AnalysisInput, prepared: list[Prepared], only: list[str] | None) -> str:
    """What the kept rows' positions and meaning depend on (not the files nor the states)."""
    digest = hashlib.sha1(definitions(inp, prepared, only))
    for p in prepared:
        digest.update(
            repr((p.name, [[m.id for m in members] for members, _s, _r in p.plans])).encode()
        )
    digest.update(
        repr([(wp.id, wp.step, wp.iteration, wp.parents) for wp in inp.workpackages]).encode()
    )
    return digest.hexdigest()


def selected(inp: AnalysisInput, only: list[str] | None) -> list[tuple[Result, list[Table]]]:
    """The results and their tables made, in file order (syslog tables are skipped by the
    caller)."""
    out = []
    for result in inp.benchmark.results:
        tables = [t for t in result.tables if only is None or t.name in only]
        if only is not None and not tables:
            continue  # its analysers are not run (report.results.analyser_names)
        for table in tables:
            if table.output == "syslog":
                print(
                    f'warning: <syslog name="{table.name}"> is not supported by caramel; skipped',
                    file=sys.stderr,
                )
        out.append((result, [t for t in tables if t.output != "syslog"]))
    return out


def build(
    inp: AnalysisInput,
    only: list[str] | None,
    prepared: list[Prepared],
    cache: AnalysisCache | None,
    kept_text: str | None,
    key: str = "",
) -> Built:
    """The selected tables: from the kept rows where they fit (`kept_text`), else all made. `key`:
    the key of the tables made now, kept with the rows."""
    digests = {p.name: [_digest(signature) for _m, signature, _r in p.plans] for p in prepared}
    states = [[wp.state, wp.reason] for wp in inp.workpackages]
    members = {p.name: {m[0].id: [w.id for w in m] for m, _s, _r in p.plans} for p in prepared}
    results = selected(inp, only)
    kept = _decode(kept_text, inp, prepared, results, digests, states)
    if kept is None:
        leaves: list[list[list[Any]]] = [
            [[name, root] for name, root in row_leaves(inp, members, result.uses)]
            for result, _t in results
        ]
        todo = [list(range(len(rows))) for rows in leaves]
        analysed = {p.name: run(p, cache) for p in prepared}
        notes: Notes = {}
    else:
        leaves = kept.leaves
        todo = [
            [i for i, deps in enumerate(per) if not kept.changed.isdisjoint(deps)]
            for per in kept.deps
        ]
        needed: dict[str, set[int]] = {p.name: set() for p in prepared}
        for r, positions in enumerate(todo):
            for i in positions:
                name = leaves[r][i][0]
                needed[name].update(d for d in kept.deps[r][i] if d in members[name])
        for p in prepared:
            needed[p.name].update(m[0].id for m, _s, _r in p.plans if m[0].id in kept.changed)
        analysed = {p.name: run(p, cache, needed[p.name]) for p in prepared}
        notes = {name: dict(per) for name, per in kept.notes.items()}
    for name, result in analysed.items():
        per = notes.setdefault(name, {})
        for root, group in result.groups.items():
            if group.problems or group.dropped:
                per[str(root)] = _encode_notes(group)
            else:
                per.pop(str(root), None)
    tables, entries, deps, deltas = _tables(inp, results, analysed, members, leaves, todo, kept)
    record = json.dumps(
        {"k": key, "d": digests, "s": states, "n": notes, "l": leaves, "p": deps, "t": entries},
        separators=(",", ":"),
    )
    scanned = sum(a.scanned for a in analysed.values())
    reused = sum(len(p.plans) for p in prepared) - scanned
    return Built(
        tables,
        _note_results(prepared, notes),
        record,
        None if kept is None else deltas,
        None if kept is None else kept.key,
        scanned,
        reused,
    )


def _tables(
    inp: AnalysisInput,
    results: list[tuple[Result, list[Table]]],
    analysed: dict[str, AnalyserResult],
    members: dict[str, dict[int, list[int]]],
    leaves: list[list[list[Any]]],
    todo: list[list[int]],
    kept: _Kept | None,
) -> tuple[TableRows, list[list[Entry | None]], list[list[list[int]]], list[Delta | None]]:
    tables: TableRows = []
    all_entries: list[list[Entry | None]] = []
    all_deps: list[list[list[int]]] = []
    deltas: list[Delta | None] = []
    for r, (result, selected_tables) in enumerate(results):
        positions = todo[r]
        rows = {
            i: make_row(inp, analysed[leaves[r][i][0]].groups, *leaves[r][i]) for i in positions
        }
        deps = list(kept.deps[r]) if kept else [[] for _ in leaves[r]]
        for i, row in rows.items():
            deps[i] = row_depends(row, members[row.analyser])
        all_deps.append(deps)
        for table in selected_tables:
            names = [c.name for c in table.columns]
            keys = table_keys(table, units(inp, analysed, result.uses, names))
            formats = entry_formats(keys)
            entries: list[Entry | None] = (
                list(kept.entries[len(all_entries)]) if kept else [None] * len(leaves[r])
            )
            before = [
                (entry[1], entry[3])
                for entry in (entries[i] for i in positions)
                if entry is not None and entry[5]
            ]
            for i in positions:
                if table.filter:  # a filtered table reads rows of its own, as build_rows makes them
                    fresh = make_row(inp, analysed[leaves[r][i][0]].groups, *leaves[r][i])
                    entries[i] = (
                        row_entry(table, formats, fresh)
                        if keep(fresh, table.filter, table.where)
                        else None
                    )
                else:
                    entries[i] = row_entry(table, formats, rows[i])
            all_entries.append(entries)
            places = [i for i, entry in enumerate(entries) if entry is not None]
            remade = set(positions)
            rebuilt = {k for k, i in enumerate(places) if i in remade}
            after: list[int] = []
            data = assemble(
                table, keys, [entry for entry in entries if entry is not None], None, rebuilt, after
            )
            tables.append((result, table, data))
            deltas.append(None if STATUS in names else Delta(before, after))
    return tables, all_entries, all_deps, deltas


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
    digests: dict[str, list[str]],
    states: list[list[str]],
) -> _Kept | None:
    """The kept rows, checked against the run's shape; None (a miss) when they do not fit."""
    if text is None:
        return None
    try:
        data = bounded.loads(text, "the kept rows", max_bytes=bounded.CACHE_BYTES)
        kept = _Kept(
            str(data["k"]), data["d"], data["s"], data["n"], data["l"], data["p"], data["t"]
        )
        if (
            set(kept.digests) != set(digests)
            or len(kept.states) != len(states)
            or len(kept.leaves) != len(results)
            or len(kept.deps) != len(results)
            or set(kept.notes) - set(digests)
        ):
            return None
        if not _mark_changed(kept, prepared, digests):
            return None
        for wp, state_before, state_now in zip(inp.workpackages, kept.states, states, strict=True):
            if state_before != state_now:
                kept.changed.add(wp.id)
        return kept if _tables_fit(kept, results, digests) else None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _mark_changed(kept: _Kept, prepared: list[Prepared], digests: dict[str, list[str]]) -> bool:
    """The members whose files changed since the rows were kept, marked; False where the kept
    digests or notes do not fit the analysers of today."""
    for p in prepared:
        old = kept.digests[p.name]
        if len(old) != len(p.plans):
            return False
        for (members, _s, _r), before, now in zip(p.plans, old, digests[p.name], strict=True):
            if before != now:
                kept.changed.update(m.id for m in members)
        for name, _expression, _wp, _message in (
            x for entry in kept.notes[p.name].values() for x in entry[0]
        ):
            if name not in p.every:
                return False
    return True


def _tables_fit(
    kept: _Kept, results: list[tuple[Result, list[Table]]], digests: dict[str, list[str]]
) -> bool:
    """Whether the kept entries have the shape of today's results and tables."""
    t = 0
    for r, (_result, tables) in enumerate(results):
        count = len(kept.leaves[r])
        if len(kept.deps[r]) != count or any(name not in digests for name, _root in kept.leaves[r]):
            return False
        for table in tables:
            if not _fits(kept.entries[t], count, len(table.columns), len(table.sort)):
                return False
            t += 1
    return t == len(kept.entries)


def _fits(entries: list[Entry | None], count: int, width: int, sorts: int) -> bool:
    if len(entries) != count:
        return False
    for entry in entries:
        if entry is None:
            continue
        sort, vals, texts, status, _leaf, _present = entry
        if (
            len(sort) != sorts
            or len(vals) != width
            or len(texts) != width
            or type(status) is not str
            or not all(type(text) is str for text in texts)
        ):
            return False
    return True
