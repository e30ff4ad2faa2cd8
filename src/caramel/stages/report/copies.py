"""The copies part of the `performance` table: one figure per copy, the declared aggregate, the
spread.

With `copies: N` a benchmark's result is made as milabench's report makes it from its GPUs
(milabench/summary.py, report `_make_row`; analyse/estimators.py `pool`). Each copy's own figure is
its estimate (the step's `estimator`) over the `performance:` lines it printed: a script that prints
one line per interval gives one figure per copy, not one per line. Then, per model, metric and
repeat, the aggregate the step declares (`copies_aggregate`): `sum`, the node's throughput and
milabench's score, the sum of the copies' figures (the default); `mean`, per copy as the Mila suite
reports (milabench's perf), the estimate over the lines of every copy pooled, so that from 5 lines
on the estimator drops the smallest and the largest line, never a whole copy. That row is the
benchmark's result. The spread of the pooled lines follows in rows `sd` and `sem`, then the
aggregate's 99 % confidence interval in rows `ci_low` and `ci_high` (analyse/intervals.py
copies_interval: of `mean` the pooled lines' t interval, or their bootstrap under a trimming
estimator; of `sum` N × the t interval of the mean of the N copies' figures), the method and level
in their status and the caption (vocabulary's COPY_SPREADS): their status says `spread`, so they
never enter the history and are never judged.
`pooled_lines` gives each copy's lines over every repeat, which `bench compare --targets` and the
suite's score judge and weigh as milabench does.

A row is flagged (in its status, without commas: csv tables are not quoted, as JUBE's) when the node
was too loaded to measure: the load average above
the cores bench may use at a copy's start or end (engine/loadavg.py), or an sd over the copies'
figures above SPREAD_LIMIT % of their mean (the copies disagree).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from caramel.stages.analyse.estimators import Summary, estimator_of, pool, summarise
from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
from caramel.stages.analyse.intervals import LEVEL, copies_interval
from caramel.stages.analyse.performance import Figure
from caramel.stages.engine.copies import COPY_PARAM, aggregate_of, copy_count
from caramel.stages.engine.loadavg import overloaded
from caramel.stages.spec.estimator import Estimator
from caramel.stages.spec.model import Step
from caramel.vocabulary import COPY_DEVIATIONS, COPY_INTERVAL

CI_CAPTION = (
    f"ci_low and ci_high: the aggregate's {100 * LEVEL:g} % confidence interval"
    " (its method in their status)"
)
SPREAD_LIMIT = 5.0  # percent: copies whose sd is above this share of their mean are flagged

Row = tuple[
    list[object], str, int
]  # the values of a row (model, copy, performance, metric, status), status, wp id


@dataclass
class _Copy:
    index: int
    wp: WPRecord
    summary: Summary
    lines: list[float]
    # its row is done: a copy that failed (or failed its sanity checks) is no part of the result
    counted: bool


# a copy's status text from its workpackage, its figure and its metric (report.performance)
StatusOf = Callable[[WPRecord, float | None, str], str]
# the lines of one copy: model, metric, step, iteration, copy index
CopyKey = tuple[str, str, str, int, int]


def copy_rows(inp: AnalysisInput, figures: list[Figure], status_of: StatusOf) -> list[Row]:
    """The rows of the figures of copies: one per copy (and repeat), then per model, metric and
    repeat the declared aggregate and the spread. `status_of(wp, figure, metric)`: a copy's status
    text, given its own figure (what its sanity expression sees)."""
    loads = load_flags(inp)
    lines: dict[CopyKey, list[Figure]] = defaultdict(list)
    for fig in figures:
        lines[
            (fig.model, fig.metric, fig.wp.step, fig.wp.iteration, int(fig.wp.params[COPY_PARAM]))
        ].append(fig)
    rows: list[Row] = []
    groups: dict[tuple[str, str, str, int], list[_Copy]] = defaultdict(list)
    for (model, metric, step_name, iteration, index), found in lines.items():
        step = inp.benchmark.steps[step_name]
        wp = found[-1].wp
        lines_of_copy = [f.performance for f in found]
        summary = summarise(lines_of_copy, estimator_of(step.estimator))
        status = status_of(wp, summary.mean, metric)
        if status == "done":
            status = _with_notes("done", [_lines_note(summary), loads.get(wp.id, "")])
        rows.append(([model, index, summary.mean, metric, status], status, wp.id))
        groups[(model, metric, step_name, iteration)].append(
            _Copy(index, wp, summary, lines_of_copy, status.startswith("done"))
        )
    for (model, metric, step_name, _iteration), copies in groups.items():
        rows += _aggregate_rows(inp.benchmark.steps[step_name], model, metric, copies, loads)
    return rows


def copies_caption(inp: AnalysisInput, figures: list[Figure]) -> str:
    """The estimator(s) the copies' figures were taken with, for the table's caption ('' without
    copies)."""
    steps = dict.fromkeys(fig.wp.step for fig in figures)
    captions = dict.fromkeys(estimator_of(inp.benchmark.steps[s].estimator).caption for s in steps)
    if captions:
        captions[CI_CAPTION] = None
    return "; ".join(captions)


def _aggregate_rows(
    step: Step, model: str, metric: str, copies: list[_Copy], loads: dict[int, str]
) -> list[Row]:
    """Per model, metric and repeat: the declared aggregate's row, the spread rows, the interval
    rows; one `incomplete` row when a copy is missing or failed."""
    aggregate = aggregate_of(step)
    estimator = estimator_of(step.estimator)
    counted = [c for c in copies if c.counted]
    expected = copy_count(step) or len(copies)
    leaf = max(c.wp.id for c in copies)
    # no result: a sum or mean of the copies that ran would not be the node's
    if len(counted) < expected:
        status = f"incomplete: {aggregate} of {len(counted)} of {expected} copies"
        return [([model, aggregate, None, metric, status], status, leaf)]
    lines = [c.lines for c in counted]
    pooled = pool(lines, estimator)
    flags = _load_flags(copies, loads) + _disagree_flags(counted, estimator)
    status = _aggregate_status(aggregate, len(copies), pooled.spread, flags)
    rows = [([model, aggregate, pooled.value(aggregate), metric, status], status, leaf)]
    rows += _spread_rows(model, metric, pooled.spread, len(copies), leaf)
    return rows + _interval_rows(model, metric, aggregate, lines, estimator, leaf)


def _aggregate_status(aggregate: str, count: int, spread: Summary, flags: list[str]) -> str:
    """The aggregate row's status: done, what it is made of, and the flags."""
    notes = [f"{aggregate} of {count} copies", _pooled_note(spread, count)]
    return _with_notes("done", notes + (["flag: " + " and ".join(flags)] if flags else []))


def _load_flags(copies: list[_Copy], loads: dict[int, str]) -> list[str]:
    """The copies that ran on a node loaded above its cores, as a flag; [] where none."""
    loaded = [str(c.index) for c in copies if c.wp.id in loads]
    if not loaded:
        return []
    return [f"node loaded at cop{'ies' if len(loaded) > 1 else 'y'} {' '.join(loaded)}"]


def _disagree_flags(counted: list[_Copy], estimator: Estimator) -> list[str]:
    """A flag when the copies' figures disagree: their sd above SPREAD_LIMIT % of their mean."""
    over = summarise([c.summary.mean for c in counted], estimator)
    if over.has_spread and over.sd_pct > SPREAD_LIMIT:
        return [f"sd {over.sd_pct:.1f}% over the copies > {SPREAD_LIMIT:g}%"]
    return []


def _spread_rows(model: str, metric: str, spread: Summary, count: int, leaf: int) -> list[Row]:
    """The pooled lines' sd and sem in rows of their own; none without a spread (one line)."""
    if not spread.has_spread:
        return []
    of = f"{spread.n} lines of {count} copies" if spread.n != count else f"{count} copies"
    texts = [f"spread: {name} of {of}" for name in COPY_DEVIATIONS]
    values = (spread.sd, spread.sem)
    return [
        ([model, name, value, metric, text], text, leaf)
        for name, value, text in zip(COPY_DEVIATIONS, values, texts, strict=True)
    ]


def _interval_rows(
    model: str,
    metric: str,
    aggregate: str,
    lines: list[list[float]],
    estimator: Estimator,
    leaf: int,
) -> list[Row]:
    """The aggregate's confidence interval (analyse/intervals.py copies_interval) in rows `ci_low`
    and `ci_high`, their status naming its level and method; none without a spread (one line)."""
    found = copies_interval(lines, aggregate, estimator)
    if not found.known:
        return []
    used = sum(map(len, lines)) if aggregate == "mean" else len(lines)
    over = f"{used} lines of {len(lines)} copies" if used != len(lines) else f"{used} copies"
    text = f"spread: {{}} of the {aggregate} ({found.label} over {over})"
    return [
        ([model, name, value, metric, text.format(name)], text.format(name), leaf)
        for name, value in zip(COPY_INTERVAL, (found.low, found.high), strict=True)
    ]


def _pooled_note(spread: Summary, count: int) -> str:
    """The lines the pooled figures were taken over, when there are more than the copies."""
    if spread.n == count:
        return ""
    if spread.used != spread.n:
        return f"{spread.n} lines pooled without the min and max"
    return f"{spread.n} lines pooled"


def pooled_lines(
    inp: AnalysisInput, figures: list[Figure], status_of: StatusOf
) -> dict[tuple[str, str], list[list[float]]]:
    """Per (model, metric): each counted copy's lines over every repeat, by copy index (what
    milabench pools per GPU over its runs); `status_of` as for copy_rows."""
    lines: dict[CopyKey, list[Figure]] = defaultdict(list)
    for fig in figures:
        lines[
            (fig.model, fig.metric, fig.wp.step, fig.wp.iteration, int(fig.wp.params[COPY_PARAM]))
        ].append(fig)
    out: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (model, metric, step_name, _iteration, index), found in lines.items():
        values = [f.performance for f in found]
        figure = summarise(values, estimator_of(inp.benchmark.steps[step_name].estimator)).mean
        if status_of(found[-1].wp, figure, metric) == "done":
            out[(model, metric)][index] += values
    return {key: [copies[k] for k in sorted(copies)] for key, copies in out.items()}


def _lines_note(summary: Summary) -> str:
    if summary.n < 2:
        return ""
    if summary.used != summary.n:
        return f"mean of {summary.used} of {summary.n} lines without the min and max"
    return f"mean of {summary.n} lines"


def _with_notes(status: str, notes: list[str]) -> str:
    notes = [n for n in notes if n]
    return f"{status} ({'; '.join(notes)})" if notes else status


def load_flags(inp: AnalysisInput) -> dict[int, str]:
    """Why a workpackage ran on a node too loaded to measure (engine/loadavg.py), per workpackage
    id."""
    from caramel.errors import CaramelError
    from caramel.stages.state.store import Store, db_path, is_run_dir

    if not is_run_dir(inp.run_dir):  # a plan analysed before a run (from_plan): no record, no flags
        return {}
    try:
        store = Store(db_path(inp.run_dir), readonly=True)
    except (CaramelError, OSError):
        return {}
    try:
        return {wp: f"flag: node loaded ({why})" for wp, why in overloaded(store.events()).items()}
    finally:
        store.close()
