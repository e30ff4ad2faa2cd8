"""The `performance` table of a benchmark without patterns (MAD's `performance:` lines).

One row per figure: model, performance, metric, and the copy when the step ran copies, then, per
model and repeat, the sum, mean and sd over its copies (numpy). A workpackage that failed or gave
no figure keeps a row with its status, so a failure never looks like a missing benchmark.
"""

from __future__ import annotations

from collections import defaultdict

from caramel.analyse.inputs import AnalysisInput
from caramel.analyse.performance import Figure, collect_figures, model_name, varying_parameters
from caramel.analyse.sanity import workpackage_failure
from caramel.report.table import Key, TableData
from caramel.spec.model import Column, Result, Table

TABLE = "performance"
COPY = "caramel_copy"
AGGREGATES = ("sum", "mean", "sd")


def _status(state: str, reason: str) -> str:
    return "done" if state == "done" else f"{state}: {reason}" if reason else state


def performance_table(inp: AnalysisInput) -> tuple[Result, Table, TableData]:
    """The table (as a <result><table>) and its data; `data.notes`: the lines that could not be read."""
    figures, problems = collect_figures(inp)
    with_copies = any(COPY in wp.params for wp in inp.workpackages)
    names = ["model"] + ([COPY] if with_copies else []) + ["performance", "metric", "status"]
    table = Table(TABLE, columns=[Column(n) for n in names], where=inp.benchmark.where)
    rows: list[tuple[list[object], str, int]] = []
    groups: dict[tuple, list[Figure]] = defaultdict(list)
    for fig in figures:
        status = _status(fig.wp.state, fig.wp.reason)
        if status == "done":  # declared sanity checks of the step (analyse/sanity.py): a failed row
            failure = workpackage_failure(inp, fig.wp, {"performance": fig.performance, "metric": fig.metric})
            status = "failed (" + failure.replace(",", ";") + ")" if failure else status
        copy = [int(fig.wp.params[COPY])] if with_copies and COPY in fig.wp.params else [None] * with_copies
        rows.append(([fig.model, *copy, fig.performance, fig.metric, status], status, fig.wp.id))
        if with_copies and COPY in fig.wp.params:
            groups[(fig.model, fig.metric, fig.wp.step, fig.wp.iteration)].append(fig)
    with_figures = {fig.wp.id for fig in figures}
    for wp in inp.workpackages:
        if wp.id not in with_figures and wp.state != "done" and wp.started:
            status = _status(wp.state, wp.reason)
            copy = [int(wp.params[COPY]) if COPY in wp.params else None] * with_copies
            model = model_name(inp.benchmark.name, wp, varying_parameters(inp, wp.step))
            rows.append(([model, *copy, None, "", status], status, wp.id))
    if groups:
        import numpy as np  # here: importing it costs every `bench result` 0.15 s
    for (model, metric, _step, _iteration), members in groups.items():
        values = np.array([f.performance for f in members])
        count = len(values)
        stats = (values.sum(), values.mean(), values.std(ddof=1) if count > 1 else 0.0)
        for name, value in zip(AGGREGATES, stats, strict=True):
            status = f"done ({name} of {count} copies)"
            rows.append(([model, name, float(value), metric, status], status, members[-1].wp.id))
    keys = [Key(n, None, "", 0) for n in names]
    data = TableData(TABLE, "pretty", ",", False, keys, [r[0] for r in rows],
                     [["" if v is None else str(v) for v in r[0]] for r in rows],
                     [r[1] for r in rows], [r[2] for r in rows])
    data.config_columns = ["model", "metric"] + ([COPY] if with_copies else [])
    data.notes = problems
    return Result([], [table], where=inp.benchmark.where), table, data
