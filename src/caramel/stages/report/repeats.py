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
from typing import TypeGuard

from caramel.stages.analyse.estimators import summarise
from caramel.stages.analyse.inputs import AnalysisInput
from caramel.stages.analyse.intervals import LEVEL, T_MEAN, mean_interval
from caramel.stages.report.copies import SPREAD_LIMIT, load_flags
from caramel.stages.report.dataset import STATUS, text_of
from caramel.stages.report.table import Key, Made, TableData, format_value
from caramel.stages.spec.estimator import DEFAULT

COUNT = "n"
CI_BOUNDS = ("ci_low", "ci_high")  # the columns of a figure's interval, after its `_sd`
CI_CAPTION = f"ci: {100 * LEVEL:g} % {T_MEAN}"


def repeat_count(inp: AnalysisInput) -> int:
    """N of `bench run --repeat N` (1: not repeated)."""
    return max((step.repeats for step in inp.benchmark.steps.values()), default=1)


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


def _means(inp: AnalysisInput, data: TableData, repeats: int) -> TableData:
    config = inp.param_names() | set(data.config_columns)
    keys = data.keys
    status_at = [i for i, k in enumerate(keys) if k.name == STATUS]
    by_config = [i for i, k in enumerate(keys) if k.name in config or k.name.startswith("jube_")]
    figures = [i for i in range(len(keys)) if i not in by_config and i not in status_at]
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for row, values in enumerate(data.values):
        groups[tuple(text_of(values[i]) for i in by_config)].append(row)
    numeric = [i for i in figures if any(_is_number(v[i]) for v in data.values)]
    out_keys: list[Key] = []
    for i, key in enumerate(keys):
        if i in status_at:
            continue
        out_keys.append(key)
        if i in numeric:
            title = None if key.title is None else f"{key.title}_sd"
            out_keys.append(Key(f"{key.name}_sd", title, key.format, 0, key.unit))
            for bound in CI_BOUNDS:
                title = None if key.title is None else f"{key.title}_{bound}"
                out_keys.append(Key(f"{key.name}_{bound}", title, key.format, 0, key.unit))
    out_keys.append(Key(COUNT, None, "", 0))
    loads = load_flags(inp)
    made = [_group_row(data, rows, numeric, status_at, loads) for rows in groups.values()]
    with_status = bool(status_at) or any(status != "done" for _values, status, _leaf in made)
    if with_status:
        out_keys.append(keys[status_at[0]] if status_at else Key(STATUS, None, "", 0))
    how = "auto" if inp.benchmark.repeat.auto else repeats  # --repeat auto: the count it reached
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
        f"mean of {repeats} repeats (bench run --repeat {how}); {DEFAULT.caption}; {CI_CAPTION}",
    )
    for values, status, leaf in made:
        values = values + [status] * with_status
        out.values.append(values)
        out.cells.append(
            [
                "" if v is None else format_value(k.format, v) if k.format else text_of(v)
                for k, v in zip(out_keys, values, strict=True)
            ]
        )
        out.statuses.append(status)
        out.leaves.append(leaf)
    return out


def _group_row(
    data: TableData,
    rows: list[int],
    numeric: list[int],
    status_at: list[int],
    loads: dict[int, str],
) -> tuple[list[object], str, int]:
    """One configuration's row: its values (means, sds, n), its status and its last workpackage."""
    first = data.values[rows[0]]
    values: list[object] = []
    flags: list[str] = []
    for i, key in enumerate(data.keys):
        if i in status_at:
            continue
        if i not in numeric:
            values.append(first[i])
            continue
        samples = [value for r in rows if _is_number(value := data.values[r][i])]
        summary = summarise(samples, DEFAULT)
        ci = mean_interval(summary.mean, summary.sd, summary.used)
        values += [
            None if math.isnan(summary.mean) else summary.mean,
            summary.sd if summary.has_spread else None,
            ci.low if ci.known else None,
            ci.high if ci.known else None,
        ]
        if summary.has_spread and summary.sd_pct > SPREAD_LIMIT:
            flags.append(f"sd {summary.sd_pct:.1f}% of {key.title or key.name}")
    values.append(len(rows))
    statuses = [data.statuses[r] for r in rows]
    status = next((s for s in statuses if not s.startswith("done")), statuses[0])
    notes = [f"flag: {' and '.join(flags)} > {SPREAD_LIMIT:g}% over the repeats"] if flags else []
    loaded = sorted({r + 1 for r, row in enumerate(rows) if data.leaves[row] in loads})
    if loaded and "node loaded" not in status:  # a copies table says it per copy already
        which = f"repeat{'s' if len(loaded) > 1 else ''} {' '.join(map(str, loaded))}"
        notes.append(f"flag: node loaded at {which}")
    if notes and status.startswith("done"):  # keep the first repeat's own notes (`sum of 2 copies`)
        joined = "; ".join(notes)
        status = f"{status[:-1]}; {joined})" if status.endswith(")") else f"{status} ({joined})"
    return values, status, max(data.leaves[r] for r in rows)
