"""The `performance` table of a benchmark without patterns (MAD's `performance:` lines).

One row per figure: model, performance, metric; when the step ran copies, one row per copy, its
declared aggregate and the spread over the copies (report/copies.py). A workpackage that failed or
gave no figure keeps a row with its status, so a failure never looks like a missing benchmark: a
finished workpackage without a figure is `failed: no figure: ...` (MAD's FAILURE row), and so is a
results CSV row without a number. The further columns of a `multiple_results` CSV follow the status
column.

Every CSV row is a row of its own: where a model gives one metric in two rows (MAD's Megatron report
writes BF16 and FP8 rows alike), the column `model_row` (1, 2, ...: the how-manieth row of that
model and metric) tells them apart and is part of the row's configuration, so the history keeps both
figures; it is there only when a run has such rows.
"""

from __future__ import annotations

from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
from caramel.stages.analyse.performance import collect, model_name, varying_parameters
from caramel.stages.analyse.sanity import workpackage_failure
from caramel.stages.report.copies import copies_caption, copy_rows, pooled_lines
from caramel.stages.report.table import Key, TableData
from caramel.stages.spec.model import Column, Result, Table
from caramel.vocabulary import WpState

TABLE = "performance"
COPY = "caramel_copy"
MODEL_ROW = "model_row"  # the row of its model and metric in the results CSV (performance.Figure)


def _status(state: str, reason: str) -> str:
    return "done" if state == "done" else f"{state}: {reason}" if reason else state


def _checked_status(
    inp: AnalysisInput, wp: WPRecord, performance: float | None, metric: str
) -> str:
    """A workpackage's status, a failed row when a declared sanity check of its step fails
    (analyse/sanity.py; its figure is then kept out of the history)."""
    status = _status(wp.state, wp.reason)
    if status == "done":
        failure = workpackage_failure(inp, wp, {"performance": performance, "metric": metric})
        status = "failed (" + failure.replace(",", ";") + ")" if failure else status
    return status


def performance_table(inp: AnalysisInput) -> tuple[Result, Table, TableData]:
    """The table (as a <result><table>) and its data; `data.notes`: the lines that could not be
    read."""
    found = collect(inp)
    figures, problems = found.figures, found.problems
    with_copies = any(COPY in wp.params for wp in inp.workpackages)
    # copies summarise each model and metric per copy (report/copies.py): no row of its own there
    with_rows = not with_copies and any(fig.model_row > 1 for fig in figures)
    columns_of_rows = [*(fig.extra for fig in figures), *(row.extra for row in found.failed)]
    extras = list(dict.fromkeys(k for extra in columns_of_rows for k in extra))
    names = (
        ["model"]
        + ([COPY] if with_copies else [])
        + ([MODEL_ROW] if with_rows else [])
        + ["performance", "metric", "status"]
        + extras
    )
    table = Table(TABLE, columns=[Column(n) for n in names], where=inp.benchmark.where)
    rows: list[tuple[list[object], str, int]] = []
    copied = [fig for fig in figures if with_copies and COPY in fig.wp.params]
    for fig in figures:
        if with_copies and COPY in fig.wp.params:
            continue  # report/copies.py: one figure per copy, the declared aggregate, the spread
        status = _checked_status(inp, fig.wp, fig.performance, fig.metric)
        rows.append(
            (
                [
                    fig.model,
                    *[None] * with_copies,
                    *[fig.model_row] * with_rows,
                    fig.performance,
                    fig.metric,
                    status,
                    *(fig.extra.get(k) for k in extras),
                ],
                status,
                fig.wp.id,
            )
        )
    for row in found.failed:  # a CSV row without a number: madengine's FAILURE row of its own
        status = f"failed: {row.reason}"
        rows.append(
            (
                [
                    row.model,
                    *[None] * with_copies,
                    *[None] * with_rows,
                    None,
                    row.metric,
                    status,
                    *(row.extra.get(k) for k in extras),
                ],
                status,
                row.wp.id,
            )
        )
    with_figures = {fig.wp.id for fig in figures}
    for wp in inp.workpackages:
        if wp.id in found.missing or (
            wp.id not in with_figures and wp.state != WpState.DONE and wp.started
        ):
            status = (
                f"failed: {found.missing[wp.id]}"
                if wp.id in found.missing
                else _status(wp.state, wp.reason)
            )
            copy = [int(wp.params[COPY]) if COPY in wp.params else None] * with_copies
            model = model_name(inp.benchmark.name, wp, varying_parameters(inp, wp.step))
            rows.append(([model, *copy, *[None] * with_rows, None, "", status], status, wp.id))
    rows += copy_rows(
        inp, copied, lambda wp, figure, metric: _checked_status(inp, wp, figure, metric)
    )
    for values, _status_text, _wp in rows:  # rows without the CSV's further columns
        values += [None] * (len(names) - len(values))
    keys = [Key(n, None, "", 0) for n in names]
    data = TableData(
        TABLE,
        "pretty",
        ",",
        False,
        keys,
        [r[0] for r in rows],
        [["" if v is None else str(v) for v in r[0]] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
    )
    data.config_columns = (
        ["model", "metric"] + ([COPY] if with_copies else []) + ([MODEL_ROW] if with_rows else [])
    )
    data.notes = problems
    data.caption = copies_caption(inp, copied)
    return Result([], [table], where=inp.benchmark.where), table, data


def copies_lines(inp: AnalysisInput) -> dict[tuple[str, str], list[list[float]]]:
    """Per (model, metric) of a step with copies: each counted copy's lines over every repeat
    (report/copies.py `pooled_lines`); {} without copies."""
    figures = [fig for fig in collect(inp).figures if COPY in fig.wp.params]
    return pooled_lines(
        inp, figures, lambda wp, figure, metric: _checked_status(inp, wp, figure, metric)
    )
