"""Tables of a `bench run --repeat N` run: the mean of the repeats, with n and sd, as
docs/history.md says.

JUBE's reduce merges a workpackage's iterations and a pattern's plain column shows its first match,
so a repeated run would show its first repeat. For a run made with `--repeat N` (Step.repeats), each
table is made from its rows without reduce (one row per repeat) grouped by configuration (the
parameter columns, as the history groups them): a numeric figure column shows the mean over the
repeats (analyse/estimators.py, all samples), followed by a column `<name>_sd` (sd with ddof=1,
empty with one sample: no spread to judge), the bounds of the mean's 99 % confidence interval,
`<name>_ci_low` and `<name>_ci_high` (Student's t, analyse/intervals.py; empty with one sample),
and a column `n` counts the repeats; the caption states the interval's method and level. A row
whose sd is above copies.SPREAD_LIMIT % of its mean, or a repeat of which ran on a node loaded
above its cores (engine/loadavg.py), is flagged in its status. Files run without `--repeat`
(JUBE's own `iterations=` included) keep JUBE's tables exactly.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TypeGuard

from caramel.stages.analyse.estimators import Summary, summarise
from caramel.stages.analyse.inputs import AnalysisInput, repeat_count
from caramel.stages.analyse.intervals import LEVEL, T_MEAN, mean_interval
from caramel.stages.report.copies import SPREAD_LIMIT, load_flags
from caramel.stages.report.dataset import STATUS, text_of
from caramel.stages.report.table import Key, Made, TableData, format_value
from caramel.stages.spec.estimator import DEFAULT

COUNT = "n"
CI_BOUNDS = ("ci_low", "ci_high")  # the columns of a figure's interval, after its `_sd`
CI_CAPTION = f"ci: {100 * LEVEL:g} % {T_MEAN}"


def repeat_means(inp: AnalysisInput, made: list[Made], unreduced: list[Made]) -> list[Made]:
    """`made` with each table replaced by the means over the repeats of its `unreduced` rows."""
    raw = {item.table.name: item for item in unreduced}
    out: list[Made] = []
    for item in made:
        source = raw.get(item.table.name)
        if item.table.output != "table" or source is None:
            out.append(item)
            continue
        out.append(Made(item.result, item.table, _means(inp, source.data, repeat_count(inp))))
    return out


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class _Columns:
    """Where a table's columns go: the status column(s), the configuration columns the rows are
    grouped by, and the numeric figure columns that get a mean, sd and interval."""

    status_at: list[int]
    by_config: list[int]
    numeric: list[int]


def _columns(inp: AnalysisInput, data: TableData) -> _Columns:
    config = inp.param_names() | set(data.config_columns)
    status_at = [i for i, k in enumerate(data.keys) if k.name == STATUS]
    by_config = [i for i, k in enumerate(data.keys) if k.name in config or _jube_name(k)]
    return _Columns(status_at, by_config, _numeric(data, {*status_at, *by_config}))


def _jube_name(key: Key) -> bool:
    return key.name.startswith("jube_")


def _numeric(data: TableData, others: set[int]) -> list[int]:
    """The figure columns (the columns but `others`) with a finite number in some row."""
    figures = [i for i in range(len(data.keys)) if i not in others]
    return [i for i in figures if any(_is_number(values[i]) for values in data.values)]


def _configurations(data: TableData, by_config: list[int]) -> list[list[int]]:
    """The rows of each configuration (its values in the grouping columns), in first-seen order."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for row, values in enumerate(data.values):
        groups[tuple(text_of(values[i]) for i in by_config)].append(row)
    return list(groups.values())


def _spread_keys(key: Key) -> list[Key]:
    """The columns after a figure's mean: its sd and its interval's bounds, in its unit."""
    return [
        Key(f"{key.name}_{suffix}", _titled(key, suffix), key.format, 0, key.unit)
        for suffix in ("sd", *CI_BOUNDS)
    ]


def _titled(key: Key, suffix: str) -> str | None:
    return None if key.title is None else f"{key.title}_{suffix}"


def _mean_keys(keys: list[Key], columns: _Columns) -> list[Key]:
    """The columns of the table of means: every column but the status, each numeric figure's
    spread after it, then the count."""
    out: list[Key] = []
    for i, key in enumerate(keys):
        if i not in columns.status_at:
            out += [key, *(_spread_keys(key) if i in columns.numeric else [])]
    return [*out, Key(COUNT, None, "", 0)]


def _cell(key: Key, value: object) -> str:
    if value is None:
        return ""
    return format_value(key.format, value) if key.format else text_of(value)


def _means(inp: AnalysisInput, data: TableData, repeats: int) -> TableData:
    columns = _columns(inp, data)
    loads = load_flags(inp)
    made = [
        _group_row(data, rows, columns, loads) for rows in _configurations(data, columns.by_config)
    ]
    status_key = _status_key(data, columns, made)
    out_keys = _mean_keys(data.keys, columns) + status_key
    out = TableData(
        data.name,
        data.style,
        data.separator,
        data.transpose,
        out_keys,
        [],
        [],
        [],
        [],
        list(data.config_columns) + [COUNT],
        list(data.notes),
        _caption(inp, repeats),
    )
    for values, status, leaf in made:
        values = values + [status] * len(status_key)
        out.values.append(values)
        out.cells.append([_cell(k, v) for k, v in zip(out_keys, values, strict=True)])
        out.statuses.append(status)
        out.leaves.append(leaf)
    return out


def _status_key(
    data: TableData, columns: _Columns, made: list[tuple[list[object], str, int]]
) -> list[Key]:
    """The status column: the table's own, else one where a configuration is not done."""
    if columns.status_at:
        return [data.keys[columns.status_at[0]]]
    if any(status != "done" for _values, status, _leaf in made):
        return [Key(STATUS, None, "", 0)]
    return []


def _caption(inp: AnalysisInput, repeats: int) -> str:
    how = "auto" if inp.benchmark.repeat.auto else repeats  # --repeat auto: the count it reached
    return f"mean of {repeats} repeats (bench run --repeat {how}); {DEFAULT.caption}; {CI_CAPTION}"


def _figure_values(summary: Summary) -> list[object]:
    """A figure's mean, sd and interval bounds (None where not known)."""
    ci = mean_interval(summary.mean, summary.sd, summary.used)
    return [
        None if math.isnan(summary.mean) else summary.mean,
        summary.sd if summary.has_spread else None,
        ci.low if ci.known else None,
        ci.high if ci.known else None,
    ]


def _group_row(
    data: TableData, rows: list[int], columns: _Columns, loads: dict[int, str]
) -> tuple[list[object], str, int]:
    """One configuration's row: its values (means, sds, n), its status and its last workpackage."""
    first = data.values[rows[0]]
    values: list[object] = []
    flags: list[str] = []
    for i, key in enumerate(data.keys):
        if i in columns.numeric:
            summary = summarise(_samples(data, rows, i), DEFAULT)
            values += _figure_values(summary)
            flags += _spread_flag(summary, key)
        elif i not in columns.status_at:
            values.append(first[i])
    values.append(len(rows))
    return values, _group_status(data, rows, flags, loads), max(data.leaves[r] for r in rows)


def _samples(data: TableData, rows: list[int], column: int) -> list[float]:
    """The column's finite numbers over the configuration's repeats."""
    return [value for r in rows if _is_number(value := data.values[r][column])]


def _spread_flag(summary: Summary, key: Key) -> list[str]:
    """What the status says of a figure spread above SPREAD_LIMIT % of its mean."""
    if summary.has_spread and summary.sd_pct > SPREAD_LIMIT:
        return [f"sd {summary.sd_pct:.1f}% of {key.title or key.name}"]
    return []


def _group_status(data: TableData, rows: list[int], flags: list[str], loads: dict[int, str]) -> str:
    """The first repeat's status that is not done (else the first's), with the flags of a done
    one: a spread too wide, repeats run on a loaded node."""
    statuses = [data.statuses[r] for r in rows]
    status = next((s for s in statuses if not s.startswith("done")), statuses[0])
    notes = [f"flag: {' and '.join(flags)} > {SPREAD_LIMIT:g}% over the repeats"] if flags else []
    if "node loaded" not in status:  # a copies table says it per copy already
        notes += _load_flag(data, rows, loads)
    return _noted(status, notes)


def _noted(status: str, notes: list[str]) -> str:
    """A done status with the notes added, the first repeat's own kept (`sum of 2 copies`)."""
    if not notes or not status.startswith("done"):
        return status
    joined = "; ".join(notes)
    return f"{status[:-1]}; {joined})" if status.endswith(")") else f"{status} ({joined})"


def _load_flag(data: TableData, rows: list[int], loads: dict[int, str]) -> list[str]:
    """The repeats (1, 2, ...) run on a node loaded above its cores, as a flag; [] where none."""
    loaded = sorted({r + 1 for r, row in enumerate(rows) if data.leaves[row] in loads})
    if not loaded:
        return []
    which = f"repeat{'s' if len(loaded) > 1 else ''} {' '.join(map(str, loaded))}"
    return [f"flag: node loaded at {which}"]
