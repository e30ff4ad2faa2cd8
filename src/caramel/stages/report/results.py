"""From a run to its filled result tables: what `bench result` and `caramel.results()` share.

    made = make_results(inp)          # every <table>/<database> of the benchmark, in file order
    for item in made: print(render(item.data))

Only the analysers the results use are run; each keeps its values in the run's analyse.db, so a
second call reads only what changed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from caramel.errors import did_you_mean
from caramel.stages.analyse import AnalyserResult, AnalysisInput, analyse_all
from caramel.stages.analyse.analyser import Prepared, prepare
from caramel.stages.analyse.cache import AnalysisCache
from caramel.stages.analyse.derived import Problem
from caramel.stages.analyse.inputs import AnalyseError, repeat_count, uses_performance_lines
from caramel.stages.report.keptrows import read_rows, rows_text
from caramel.stages.report.keys import definitions, shape_key
from caramel.stages.report.table import Made, Shown, TableData, shown
from caramel.stages.spec.model import Column, Pattern, Result, Table
from caramel.stages.state import bounded
from caramel.stages.state.codec import CodecError, decode, encode
from caramel.vocabulary import STATISTICS

if TYPE_CHECKING:  # the row by row modules are imported where tables are made, not when kept
    from caramel.stages.report.incremental import Built
    from caramel.stages.report.patch import Delta


def table_names(inp: AnalysisInput) -> list[str]:
    return [t.name for r in inp.benchmark.results for t in r.tables]


def check_uses(inp: AnalysisInput) -> None:
    for result in inp.benchmark.results:
        for name in result.uses:
            if name not in inp.benchmark.analysers:
                raise AnalyseError(
                    f"<result> uses analyser '{name}', which is not defined",
                    result.where,
                    hint=did_you_mean(name, inp.benchmark.analysers)
                    or "analysers: " + (", ".join(inp.benchmark.analysers) or "none"),
                )


def analyser_names(inp: AnalysisInput, only: list[str] | None = None) -> list[str]:
    """The analysers the selected results use (all analysers when the benchmark has no result)."""
    check_uses(inp)
    if not inp.benchmark.results:
        return list(inp.benchmark.analysers)
    names: list[str] = []
    for result in inp.benchmark.results:
        if only is not None and not any(t.name in only for t in result.tables):
            continue
        names += [n for n in result.uses if n not in names]
    return names


def analyse_for(
    inp: AnalysisInput, only: list[str] | None = None, use_cache: bool = True
) -> dict[str, AnalyserResult]:
    """Run the analysers the selected results use."""
    return analyse_all(inp, analyser_names(inp, only), use_cache)


# bumped when caramel changes what a table holds (the intervals of repeats and copies) or which
# tables a run has (the performance table of MAD-style benchmarks only): tables
# kept by an older caramel are made again, never shown in their old shape
TABLES_SHAPE = (
    "repeats with ci_low, ci_high; copies with ci_low, ci_high rows; "
    "performance only when MAD-style"
)


@dataclass
class Produced:
    made: list[Made]
    warnings: list[str]
    scanned: int  # result groups analysed by this call
    reused: int  # result groups whose analysed values were kept
    from_cache: bool  # the finished tables were kept: nothing changed since they were made
    key: str = ""  # what the tables were made from (definitions, files' signatures, states)
    base_key: str | None = None  # with `deltas`: the key of the tables they were made again from
    deltas: list[Delta | None] | None = None  # per table, the rows made again; None: all made


def produce(inp: AnalysisInput, only: list[str] | None = None, use_cache: bool = True) -> Produced:
    """The selected tables of the run, analysing only what changed; an unchanged run is answered
    from the tables kept by the last call (the key covers definitions, files and states), a run
    where a few things changed from the rows kept by the last call (report.incremental)."""
    _check_only(inp, only)
    prepared = [prepare(inp, inp.benchmark.analysers[n]) for n in analyser_names(inp, only)]
    cache = AnalysisCache(inp.cache_path if use_cache else None)
    try:
        key = _key(inp, prepared, only)
        kept = _kept_tables(cache.load_tables(key), inp.cache_path or "")
        if kept is not None:
            made, notes = kept
            return Produced(made, notes, 0, sum(len(p.plans) for p in prepared), True, key)
        return _made_now(inp, only, prepared, cache, key)
    finally:
        cache.close()


def _made_now(
    inp: AnalysisInput,
    only: list[str] | None,
    prepared: list[Prepared],
    cache: AnalysisCache,
    key: str,
) -> Produced:
    """The tables made from the rows kept by the last call where they fit, else all made; kept in
    the cache, tables and rows, for the next call."""
    from caramel.stages.report.incremental import build

    shape = shape_key(inp, prepared, only)
    repeated = repeat_count(inp) > 1
    # the kept tables are the rows' own unless the repeats' means replaced them
    kept = None if repeated else lambda old: _kept_data(cache.load_tables(old))
    built = build(inp, only, prepared, cache, cache.load_rows(shape), key, kept)
    made = _with_performance(inp, only, built)
    # `bench run --repeat N`: the mean of the repeats, not JUBE's first (report/repeats.py)
    if repeated:
        from caramel.stages.report.repeats import repeat_means  # here: most runs have no repeats

        made = repeat_means(inp, made, history_tables(inp))
    made = [_with_shown(item) for item in made]
    notes = (
        warnings(built.for_notes)
        + unknown_columns(inp, built.for_notes, made)
        + [note for item in made for note in item.data.notes]
    )
    cache.store_tables(key, *_tables_json(made, notes, None if repeated else built.lines))
    cache.store_rows(shape, built.record)
    deltas = None if repeated else _deltas(built, len(made))
    return Produced(made, notes, built.scanned, built.reused, False, key, built.base_key, deltas)


def _with_shown(item: Made) -> Made:
    """A table with how it shows in its own style (kept with it: the next call on an unchanged run
    shows it as kept)."""
    if item.table.output != "table" or item.data.style == "json":  # json: shown from its rows
        return item
    return Made(item.result, item.table, item.data, shown(item.data))


def _deltas(built: Built, tables: int) -> list[Delta | None] | None:
    """The rows made again per table; the tables made after the built ones (performance) as
    wholly made."""
    if built.deltas is None:
        return None
    return built.deltas + [None] * (tables - len(built.deltas))


def _key(inp: AnalysisInput, prepared: list[Prepared], only: list[str] | None) -> str:
    """What the finished tables depend on: the definitions, every file's signature, every state."""
    digest = hashlib.sha1(definitions(inp, prepared, only))
    digest.update(TABLES_SHAPE.encode())
    digest.update(repr([(p.name, len(p.plans)) for p in prepared]).encode())
    for p in prepared:
        for _members, signature, _reads in p.plans:
            digest.update(signature.encode())
    digest.update(repr([(wp.id, wp.state, wp.reason) for wp in inp.workpackages]).encode())
    return digest.hexdigest()


def _with_performance(inp: AnalysisInput, only: list[str] | None, built: Built) -> list[Made]:
    # the MAD-style modules are imported where tables are made: a call that finds nothing changed
    # (kept tables) or a benchmark of another style reads none of them
    made = [Made(*table) for table in built.tables]
    if not uses_performance_lines(inp):
        return made
    from caramel.stages.report.performance import TABLE as PERFORMANCE_TABLE
    from caramel.stages.report.performance import performance_table

    if only is None or PERFORMANCE_TABLE in only:
        table = performance_table(inp)
        if table is not None:  # a benchmark of no MAD style has none (JUBE: no <result>, no table)
            made.append(Made(*table))
    return made


def _repeats(inp: AnalysisInput) -> bool:
    """A step repeats: the history's figures come from tables without reduce (one row per
    repeat)."""
    return any(step.iterations > 1 for step in inp.benchmark.steps.values())


def history_change(
    inp: AnalysisInput, produced: Produced
) -> tuple[str, str | None, list[Delta | None] | None]:
    """What the history needs to update only the figures of the rows made again: (the tables' key,
    the key they were made again from, the deltas). No deltas when the history's tables are not
    these (a step repeats: history_tables makes them without reduce)."""
    if _repeats(inp):
        return produced.key, None, None
    return produced.key, produced.base_key, produced.deltas


def history_tables(inp: AnalysisInput, made: list[Made] | None = None) -> list[Made]:
    """The tables the history's figures come from, one row per repeat: `made` (the tables `bench
    result` just made) when no step repeats, else the tables made again with every analyser's
    `reduce` off."""
    if made is not None and not _repeats(inp):
        return made
    bench = copy.copy(inp.benchmark)
    bench.analysers = {name: copy.copy(a) for name, a in bench.analysers.items()}
    for analyser in bench.analysers.values():
        analyser.reduce = False
    unreduced = copy.copy(inp)
    unreduced.benchmark = bench
    return make_results(unreduced)


def _tables_json(
    made: list[Made], notes: list[str], lines: list[list[str] | None] | None = None
) -> tuple[str, str]:
    """The finished tables as JSON, and their rows (report.keptrows: read only where they are
    needed, an unchanged run's tables are shown as kept, `shown`). `lines`: per table, its rows'
    lines where known (a patched table's)."""
    tables = [
        [
            encode(m.result),
            encode(m.table),
            None if m.shown is None else dataclasses.astuple(m.shown),
        ]
        for m in made
    ]
    known = (lines or []) + [None] * (len(made) - len(lines or []))
    return (
        json.dumps([tables, notes], separators=(",", ":")),
        rows_text([m.data for m in made], known),
    )


def _kept_tables(
    kept: tuple[str, str] | None, where: str = ""
) -> tuple[list[Made], list[str]] | None:
    """The tables `_tables_json` wrote, their rows read when first needed; None (a miss) for
    anything else: they are made again. `where`: the cache, for the error of rows kept there that
    do not decode."""
    if kept is None:
        return None
    try:
        items, notes = bounded.loads(kept[0], "the kept tables", max_bytes=bounded.CACHE_BYTES)
        rows = _KeptRows(kept[1], where, len(items))
        made = [
            Made(
                decode(Result, result, "result"),
                decode(Table, table, "table"),
                shown=_kept_shown(kept_shown),
                kept=functools.partial(rows.table, index),
            )
            for index, (result, table, kept_shown) in enumerate(items)
        ]
        if not all(isinstance(note, str) for note in notes):
            return None
        return made, notes
    except (ValueError, TypeError, CodecError):
        return None


def _kept_shown(kept: Any) -> Shown | None:
    """How a kept table shows (`Shown` as JSON); ValueError where it is anything else."""
    if kept is None:
        return None
    style, text, bad, caption = kept
    if not all(isinstance(item, str) for item in (style, text, caption, *bad)):
        raise ValueError("a kept table's text of another shape")
    return Shown(style, text, list(bad), caption)


@dataclass
class _KeptRows:
    """The rows of the kept tables, read when a table's are first needed: rows that do not decode
    are an error that says how to make them again (the tables were shown already, or are about to
    be)."""

    text: str
    where: str
    count: int
    tables: list[tuple[TableData, list[str]]] | None = None  # each with its rows' lines

    def table(self, index: int) -> TableData:
        return self.read()[index][0]

    def read(self) -> list[tuple[TableData, list[str]]]:
        if self.tables is None:
            try:
                self.tables = read_rows(self.text, self.count)
            except (ValueError, TypeError) as exc:
                raise AnalyseError(
                    f"the tables kept in {self.where or 'the analysis cache'} do not decode: {exc}",
                    hint="bench result --reanalyse makes them again",
                ) from None
        return self.tables


def _kept_data(kept: tuple[str, str] | None) -> list[tuple[TableData, list[str]]] | None:
    """The tables kept under a key, rows and all, each with its rows' lines (report.keptrows);
    None where they do not decode."""
    if kept is None:
        return None
    try:
        items, _notes = bounded.loads(kept[0], "the kept tables", max_bytes=bounded.CACHE_BYTES)
        return _KeptRows(kept[1], "", len(items)).read()
    except (ValueError, TypeError, AnalyseError):
        return None


def _check_only(inp: AnalysisInput, only: list[str] | None) -> None:
    """Every name of `-o` is a table or database the run makes; the MAD `performance` table only
    where the benchmark is MAD-style (its logs are read for that only when `-o` is given)."""
    if not only:
        return
    from caramel.stages.report.performance import TABLE as PERFORMANCE_TABLE

    known = table_names(inp) + ([PERFORMANCE_TABLE] if _makes_performance(inp) else [])
    for name in only:
        if name not in known:
            raise AnalyseError(
                f"no table or database named '{name}' in benchmark '{inp.benchmark.name}'",
                hint=_only_hint(inp, name, known),
            )


def _makes_performance(inp: AnalysisInput) -> bool:
    """Whether `bench result` makes the run's MAD `performance` table (report.performance)."""
    from caramel.stages.analyse.performance import (
        collect,
        follows_mad_convention,
        uses_performance_lines,
    )

    return uses_performance_lines(inp) and follows_mad_convention(inp, collect(inp))


def _only_hint(inp: AnalysisInput, name: str, known: list[str]) -> str:
    """What the run offers instead of `name`; for `performance`, what makes that table."""
    from caramel.stages.analyse.performance import uses_performance_lines
    from caramel.stages.report.performance import TABLE as PERFORMANCE_TABLE

    offered = did_you_mean(name, known) or "results: " + (", ".join(known) or "none")
    if name != PERFORMANCE_TABLE:
        return offered
    has = "patterns of its own" if not uses_performance_lines(inp) else "none of these"
    return (
        "the performance table is MAD's, made for a benchmark without patterns that is a "
        "models.json entry, declares meta multiple_results or prints 'performance: NUMBER UNIT' "
        f"lines; this run has {has} ({offered})"
    )


def make_results(
    inp: AnalysisInput, only: list[str] | None = None, use_cache: bool = True
) -> list[Made]:
    """Every selected table made from every row (the analysed values may come from the cache)."""
    _check_only(inp, only)
    from caramel.stages.report.incremental import build

    prepared = [prepare(inp, inp.benchmark.analysers[n]) for n in analyser_names(inp, only)]
    cache = AnalysisCache(inp.cache_path if use_cache else None)
    try:
        return _with_performance(inp, only, build(inp, only, prepared, cache, None))
    finally:
        cache.close()


def unknown_columns(
    inp: AnalysisInput, analysed: dict[str, AnalyserResult], made: list[Made]
) -> list[str]:
    """Columns that name no parameter or pattern: JUBE prints them empty without a word, which
    hides a typo; the table stays as JUBE makes it, the warning says why the column is empty."""
    known = _known_names(inp, analysed)
    out = []
    for item in made:
        if item.data.config_columns:  # a table caramel made (performance lines), not the file's
            continue
        for index, column in enumerate(item.table.columns):
            if not _explained(column.name, known, item.data.values, index):
                out.append(_empty_column(item.table.name, column, known))
    return out


def _known_names(inp: AnalysisInput, analysed: dict[str, AnalyserResult]) -> set[str]:
    """The parameters, the patterns and their statistics (`NAME_avg`, ...)."""
    known = inp.param_names()
    for name in (name for result in analysed.values() for name in result.patterns):
        known.add(name)
        known.update(f"{name}_{stat}" for stat in STATISTICS)
    return known


def _explained(name: str, known: set[str], rows: list[list[object]], index: int) -> bool:
    """Whether a column is known, one of JUBE's own, or has a value in some row."""
    if name in known or name.startswith("jube_"):
        return True
    return any(index < len(row) and row[index] is not None for row in rows)


def _empty_column(table: str, column: Column, known: set[str]) -> str:
    hint = did_you_mean(column.name, sorted(known))
    return (
        f"{column.where}: column '{column.name}' of '{table}' names no parameter"
        " or pattern; it stays empty" + (f" ({hint})" if hint else "")
    )


def result_dir(inp: AnalysisInput, result: Result) -> str:
    """JUBE's place for result files: <run dir>/result, or result_dir=/<run id> next to the file."""
    if not result.result_dir:
        return os.path.join(inp.run_dir, "result")
    folder = os.path.expandvars(os.path.expanduser(result.result_dir))
    run_id = os.path.basename(inp.run_dir.rstrip("/"))
    return os.path.join(inp.benchmark.home, folder, run_id)


def warnings(analysed: dict[str, AnalyserResult], limit: int = 5) -> list[str]:
    """What the analysis could not do, once per pattern: derived patterns that failed with all their
    inputs present, and matches that are not of the pattern's type."""
    out: list[str] = []
    for result in analysed.values():
        failed, dropped = _failed_and_dropped(result)
        out += [_failed_warning(name, problems) for name, problems in list(failed.items())[:limit]]
        out += [
            _dropped_warning(result.patterns.get(name), name, *counts)
            for name, counts in list(dropped.items())[:limit]
        ]
    return out


def _failed_and_dropped(
    result: AnalyserResult,
) -> tuple[dict[str, list[Problem]], dict[str, tuple[int, str, int]]]:
    """Per pattern, over the result groups: its problems, and its matches left out (how many, the
    first, in how many workpackages)."""
    failed: dict[str, list[Problem]] = {}
    dropped: dict[str, tuple[int, str, int]] = {}
    for group in result.groups.values():
        for problem in group.problems:
            failed.setdefault(problem.pattern.name, []).append(problem)
        for name, (count, first) in group.dropped.items():
            matches, first_seen, groups = dropped.get(name, (0, first, 0))
            dropped[name] = (matches + count, first_seen, groups + 1)
    return failed, dropped


def _failed_warning(name: str, problems: list[Problem]) -> str:
    p = problems[0]
    more = f" (and {len(problems) - 1} more workpackages)" if len(problems) > 1 else ""
    if p.pattern.mode == "pattern":  # a regex stopped at its time bound
        return (
            f"{p.pattern.where}: pattern '{name}' /{p.expression}/ {p.message} in "
            f"workpackage {p.wp_id}{more}; its value is missing"
        )
    return (
        f"{p.pattern.where}: pattern '{name}': {p.pattern.mode} expression"
        f" {p.expression!r} failed for workpackage {p.wp_id}: {p.message}{more};"
        " its value is nan"
    )


def _dropped_warning(
    pattern: Pattern | None, name: str, count: int, first: str, groups: int
) -> str:
    where = f"{pattern.where}: " if pattern is not None else ""
    kind = pattern.type if pattern is not None else "?"
    return (
        f"{where}pattern '{name}': {count} match(es) in {groups} workpackage(s) are"
        f" not a {kind} (first: {first!r}) and were left out"
    )
