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

from dataclasses import dataclass

from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
from caramel.stages.analyse.performance import (
    Collected,
    FailedRow,
    Figure,
    collect,
    follows_mad_convention,
    model_name,
    varying_parameters,
)
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


# Row: a row's values, its status and its workpackage's id (what TableData keeps per row)
Row = tuple[list[object], str, int]


@dataclass(frozen=True)
class _Columns:
    """The table's columns: which optional ones it has and the results CSV's further ones."""

    with_copies: bool  # a step ran copies: a column `caramel_copy` (report/copies.py)
    with_rows: bool  # a CSV gave a model and metric twice: a column `model_row`
    extras: list[str]

    @property
    def names(self) -> list[str]:
        return (
            ["model"]
            + ([COPY] if self.with_copies else [])
            + ([MODEL_ROW] if self.with_rows else [])
            + ["performance", "metric", "status"]
            + self.extras
        )

    @property
    def config_columns(self) -> list[str]:
        return (
            ["model", "metric"]
            + ([COPY] if self.with_copies else [])
            + ([MODEL_ROW] if self.with_rows else [])
        )


def _columns(inp: AnalysisInput, found: Collected) -> _Columns:
    with_copies = any(COPY in wp.params for wp in inp.workpackages)
    # copies summarise each model and metric per copy (report/copies.py): no row of its own there
    with_rows = not with_copies and any(fig.model_row > 1 for fig in found.figures)
    return _Columns(with_copies, with_rows, _further_columns(found))


def _further_columns(found: Collected) -> list[str]:
    """The results CSV's columns beyond model, performance and metric, in the order first seen."""
    columns_of_rows = [*(fig.extra for fig in found.figures), *(row.extra for row in found.failed)]
    return list(dict.fromkeys(k for extra in columns_of_rows for k in extra))


def _figure_row(inp: AnalysisInput, columns: _Columns, fig: Figure) -> Row:
    status = _checked_status(inp, fig.wp, fig.performance, fig.metric)
    values: list[object] = [
        fig.model,
        *[None] * columns.with_copies,
        *[fig.model_row] * columns.with_rows,
        fig.performance,
        fig.metric,
        status,
        *(fig.extra.get(k) for k in columns.extras),
    ]
    return values, status, fig.wp.id


def _failed_csv_row(columns: _Columns, row: FailedRow) -> Row:
    """A CSV row without a number: madengine's FAILURE row of its own."""
    status = f"failed: {row.reason}"
    values: list[object] = [
        row.model,
        *[None] * columns.with_copies,
        *[None] * columns.with_rows,
        None,
        row.metric,
        status,
        *(row.extra.get(k) for k in columns.extras),
    ]
    return values, status, row.wp.id


def _without_figure(inp: AnalysisInput, found: Collected) -> list[WPRecord]:
    """The workpackages that keep a row without a figure: MAD's FAILURE (a finished one of a last
    step) and every started one that did not finish."""
    with_figures = {fig.wp.id for fig in found.figures}
    return [
        wp
        for wp in inp.workpackages
        if wp.id in found.missing
        or (wp.id not in with_figures and wp.state != WpState.DONE and wp.started)
    ]


def _no_figure_row(inp: AnalysisInput, found: Collected, columns: _Columns, wp: WPRecord) -> Row:
    missing = found.missing.get(wp.id)
    status = f"failed: {missing}" if missing is not None else _status(wp.state, wp.reason)
    copy = [int(wp.params[COPY]) if COPY in wp.params else None] * columns.with_copies
    model = model_name(inp.benchmark.name, wp, varying_parameters(inp, wp.step))
    return [model, *copy, *[None] * columns.with_rows, None, "", status], status, wp.id


def _rows(inp: AnalysisInput, found: Collected, columns: _Columns) -> list[Row]:
    """Every row, each as long as the table is wide: the figures, the CSV's rows without a number,
    the workpackages without a figure, then each copied figure's rows (report/copies.py)."""
    copied = _copied(found, columns)
    rows = [_figure_row(inp, columns, f) for f in found.figures if not _of_a_copy(columns, f)]
    rows += [_failed_csv_row(columns, row) for row in found.failed]
    rows += [_no_figure_row(inp, found, columns, wp) for wp in _without_figure(inp, found)]
    rows += copy_rows(
        inp, copied, lambda wp, figure, metric: _checked_status(inp, wp, figure, metric)
    )
    width = len(columns.names)
    for values, _status_text, _wp in rows:  # rows without the CSV's further columns
        values += [None] * (width - len(values))
    return rows


def _of_a_copy(columns: _Columns, fig: Figure) -> bool:
    """A figure of a copy: report/copies.py makes its rows (per copy, the aggregate, the spread)."""
    return columns.with_copies and COPY in fig.wp.params


def _copied(found: Collected, columns: _Columns) -> list[Figure]:
    return [fig for fig in found.figures if _of_a_copy(columns, fig)]


def _table_data(names: list[str], rows: list[Row]) -> TableData:
    values, statuses, wp_ids = zip(*rows, strict=True) if rows else ((), (), ())
    return TableData(
        TABLE,
        "pretty",
        ",",
        False,
        [Key(n, None, "", 0) for n in names],
        list(values),
        [["" if v is None else str(v) for v in row] for row in values],
        list(statuses),
        list(wp_ids),
    )


def performance_table(inp: AnalysisInput) -> tuple[Result, Table, TableData] | None:
    """The table (as a <result><table>) and its data; `data.notes`: the lines that could not be
    read. None for a benchmark that is not MAD-style (analyse.performance.follows_mad_convention):
    JUBE shows no table for a file without a <result>."""
    found = collect(inp)
    if not follows_mad_convention(inp, found):
        return None
    columns = _columns(inp, found)
    names = columns.names
    table = Table(TABLE, columns=[Column(n) for n in names], where=inp.benchmark.where)
    data = _table_data(names, _rows(inp, found, columns))
    data.config_columns = columns.config_columns
    data.notes = found.problems
    data.caption = copies_caption(inp, _copied(found, columns))
    return Result([], [table], where=inp.benchmark.where), table, data


def copies_lines(inp: AnalysisInput) -> dict[tuple[str, str], list[list[float]]]:
    """Per (model, metric) of a step with copies: each counted copy's lines over every repeat
    (report/copies.py `pooled_lines`); {} without copies."""
    figures = [fig for fig in collect(inp).figures if COPY in fig.wp.params]
    return pooled_lines(
        inp, figures, lambda wp, figure, metric: _checked_status(inp, wp, figure, metric)
    )
