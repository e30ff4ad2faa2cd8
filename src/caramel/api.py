"""The notebook API: a run's results as a pandas DataFrame.

    import caramel
    df = caramel.results("bench_run/000003")            # every value of every row
    df = caramel.results("bench_run", table="result")   # one <table>: its columns, titles, sort,
    filter df.attrs["units"]                                     # {"runtime": "s", ...}

Columns are typed: int parameters and patterns become nullable Int64, floats float64, the rest
strings (object); missing values are NA/NaN, never "". Every row has `status` (done, failed,
open, ... as in `bench result`) and `workpackage` (the id of the row's last workpackage), so a
failed run never looks like a success in a plot.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from caramel.stages.analyse.inputs import AnalysisInput, WPRecord, from_run
from caramel.stages.analyse.patterns import kind as pattern_type
from caramel.stages.report.dataset import STATUS, Row, build_rows, units
from caramel.stages.report.results import analyse_for, produce
from caramel.stages.spec.model import Analyser, Pattern
from caramel.vocabulary import FLOAT_STATISTICS, SAME_TYPE_STATISTICS

if TYPE_CHECKING:  # pandas is imported when a frame is asked for, not with caramel
    from pandas import DataFrame

    from caramel.stages.report.table import TableData


def results(
    run_dir: str, table: str | None = None, run_id: int | str | None = None, reanalyse: bool = False
) -> DataFrame:
    """The results of the run in `run_dir` (a run folder, or an outpath with `run_id`, default the
    last).

    With `table`, the columns of that `<table>` (or `<database>`) in its order, named by their
    titles, sorted and filtered as the table is; values keep their type (no `format=`). Without it,
    all values of every row: analysed values, statistics, and parameters (also as `name_<step>`).
    """
    import pandas as pd

    from caramel.stages.state.registry import resolve

    run = resolve(run_dir, None if run_id is None else str(run_id))
    inp = from_run(run)
    if table is not None:
        return _table_frame(pd, inp, table, reanalyse)
    return _rows_frame(pd, inp, reanalyse)


def _rows_frame(pd: ModuleType, inp: AnalysisInput, reanalyse: bool) -> DataFrame:
    """Every value of every row, each column named as the row names it."""
    analysed = analyse_for(inp, use_cache=not reanalyse)
    uses = _results_uses(inp) or list(analysed)
    rows: list[Row] = build_rows(inp, analysed, uses)
    records = [_record(row.as_dict(), row.status, row.leaf.id) for row in rows]
    columns = _names(records)
    patterns = _patterns(inp, uses)
    params = _param_kinds(inp, [wp for row in rows for wp in row.chain])
    kinds = {c: _kind(c, patterns, params) for c in columns}
    frame = _frame(pd, records, columns, kinds)
    frame.attrs["units"] = units(inp, analysed, uses, columns)
    frame.attrs["run_dir"] = inp.run_dir
    return frame


def _results_uses(inp: AnalysisInput) -> list[str]:
    """The analysers the benchmark's results use, each once, in order."""
    uses: list[str] = []
    for result in inp.benchmark.results:
        uses += [u for u in result.uses if u not in uses]
    return uses


def _names(records: list[dict[str, object]]) -> list[str]:
    """Every name of the records, in the order first seen."""
    return list(dict.fromkeys(name for record in records for name in record))


def _record(values: dict[str, object], status: str, workpackage: int) -> dict[str, object]:
    """A row's values, with its status and its last workpackage's id."""
    values[STATUS] = status
    values["workpackage"] = workpackage
    return values


def _table_frame(pd: ModuleType, inp: AnalysisInput, table: str, reanalyse: bool) -> DataFrame:
    """One table's columns (named by their titles; caramel's status column left to `status`)."""
    (made,) = produce(inp, [table], use_cache=not reanalyse).made
    data = made.data
    pairs = _shown(data)
    columns = [column for column, _ in pairs]
    records = [
        _record({column: vals[i] for column, i in pairs}, status, leaf)
        for vals, status, leaf in zip(data.values, data.statuses, data.leaves, strict=True)
    ]
    patterns = _patterns(inp, made.result.uses)
    params = _param_kinds(inp, inp.workpackages)
    kinds = {column: _kind(data.keys[i].name, patterns, params) for column, i in pairs}
    frame = _frame(pd, records, columns + [STATUS, "workpackage"], kinds)
    frame.attrs["units"] = {column: data.keys[i].unit for column, i in pairs if data.keys[i].unit}
    frame.attrs["run_dir"] = inp.run_dir
    return frame


def _shown(data: TableData) -> list[tuple[str, int]]:
    """Each column the table shows (caramel's status column aside): its title (else its name) and
    its index."""
    shown = [i for i, k in enumerate(data.keys) if k.name != STATUS]
    return [(data.keys[i].title or data.keys[i].name, i) for i in shown]


def _patterns(inp: AnalysisInput, uses: list[str]) -> dict[str, Pattern]:
    """The patterns of the analysers `uses` names, by name."""
    bench = inp.benchmark
    out: dict[str, Pattern] = {}
    analysers = (bench.analysers[name] for name in uses if name in bench.analysers)
    for set_name in (s for analyser in analysers for s in _pattern_sets(analyser)):
        for p in bench.patternsets[set_name].patterns if set_name in bench.patternsets else []:
            out[p.name] = p
    return out


def _pattern_sets(analyser: Analyser) -> list[str]:
    """The pattern sets an analyser uses: its own, then its files'."""
    return list(analyser.uses) + [u for a in analyser.analyses for f in a.files for u in f.uses]


def _param_kinds(inp: AnalysisInput, wps: list[WPRecord]) -> dict[str, str]:
    """Each parameter column's type as the workpackages' records declare it (`name` and
    `name_<step>`); "auto" where workpackages declare a name with different types (a column has one
    dtype)."""
    out: dict[str, str] = {}
    seen: set[tuple[str, int]] = set()
    for wp in wps:
        if (wp.step, wp.id) in seen:
            continue
        seen.add((wp.step, wp.id))
        params = wp.params
        for name in params:
            kind = params.type_of(name)
            for column in (name, f"{name}_{wp.step}"):
                if out.setdefault(column, kind) != kind:
                    out[column] = "auto"
    return out


def _kind(name: str, patterns: dict[str, Pattern], params: dict[str, str]) -> str:
    """The declared type behind a column: a pattern's type (and its statistics'), else a
    parameter's."""
    if name in (STATUS, "jube_res_analyser"):
        return "string"
    if name == "workpackage":
        return "int"
    if name in patterns:
        return pattern_type(patterns[name])
    statistic = _statistic_kind(name, patterns)
    return statistic if statistic is not None else params.get(name, "auto")


def _statistic_kind(name: str, patterns: dict[str, Pattern]) -> str | None:
    """The type of a pattern's statistic column (`<pattern>_<statistic>`); None for another."""
    for stat in FLOAT_STATISTICS + SAME_TYPE_STATISTICS + ("cnt", "sum2"):
        if name.endswith("_" + stat) and name[: -len(stat) - 1] in patterns:
            base = pattern_type(patterns[name[: -len(stat) - 1]])
            if stat == "cnt":
                return "int"
            return "float" if stat in FLOAT_STATISTICS and base != "string" else base
    return None


def _frame(
    pd: ModuleType, records: list[dict[str, object]], columns: list[str], kinds: dict[str, str]
) -> DataFrame:
    frame = (
        pd.DataFrame.from_records(records, columns=columns)
        if records
        else pd.DataFrame(columns=columns)
    )
    for column in columns:
        kind = kinds.get(column, "auto")
        try:
            if kind == "int":
                frame[column] = pd.array([_int_or_na(v) for v in frame[column]], dtype="Int64")
            elif kind == "float":
                frame[column] = pd.to_numeric(frame[column], errors="raise").astype("float64")
            elif kind == "string":
                frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
        except (TypeError, ValueError):
            pass  # a value that is not of the declared type: keep the column as it came
    return frame


def _int_or_na(value: object) -> int | None:
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    raise ValueError(value)


def sweep(
    function: Callable[..., object] | str,
    space: Mapping[str, object],
    system: str | None = "local",
    figures: Mapping[str, object] | None = None,
    name: str | None = None,
    outpath: str = "sweep_run",
    systems: list[str] | None = None,
    history: str | None = None,
    record: bool = True,
) -> DataFrame:
    """Call `function` (importable by name, or "package.module:function") once per point of `space`
    (parameter -> list of values, or one value) through submitit on `system`, as a `call:` step does
    (docs/functions.md); its figures (`figures`, else the function's `caramel_figures`) are added to
    the history unless `record` is false. Returns the run's results (`results`)."""
    from caramel.sweep import run_sweep

    run_dir, table = run_sweep(
        function, space, system, figures, name, outpath, systems, history, record
    )
    return results(run_dir, table=table)


__all__ = ["results", "sweep"]

if __name__ == "__main__":  # pragma: no cover - quick look from a shell
    import sys

    print(results(sys.argv[1] if len(sys.argv) > 1 else os.getcwd()).to_string())
