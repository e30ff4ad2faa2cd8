"""The summary at the top of the dashboard: per benchmark, system and metric the latest figure,
its change against the run before and against the named baseline, and a verdict.

The latest figure is the best configuration of the latest run (the headline a reader looks for),
best among comparable configurations only: those of the same problem size. A parameter that varies
among the run's configurations, holds sizes (numbers, or `117M`, `13B`) and names no hardware
(`size`, `model_size`; not `nodes`, `gpus`: pages.axes.is_scaling) makes a different problem, whose
elapsed time says nothing of the other; the headline is the best configuration of the largest
problem (never the smallest problem's short time). A parameter of words (a layout, a precision) is
an alternative way to the same problem: its configurations compete.
the verdict covers every configuration: "regressed" when any regressed against the run before,
else "unstable" when the headline's spread is above 5 % of its mean, else "improved" when any
improved, else "within noise" ("first run" without a run before).

A figure of one sample (or one against a single sample) has no spread to judge a change by: its
pair is "cannot judge" (`bench compare`'s rule without a threshold) and never a regression,
whatever the change (a loaded node makes ±20 % of one sample). A figure of repeats shows its mean's
99 % t interval, and a change between figures of repeats the 99 % interval of their ratio (the
verdict's, history.compare.judge). A copies table's aggregate (`caramel_copy=sum|mean`) is a metric
of its own, never a configuration that competes with one copy's figure; its spread rows are no
figures at all.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from caramel.consumers.history.compare import Verdict
from caramel.consumers.pages.axes import axis_value, is_scaling, titled_metric
from caramel.consumers.pages.figures import plotted
from caramel.consumers.pages.judging import judged_words, judgement
from caramel.consumers.pages.sources import Collection, Figure, MetricKey
from caramel.stages.analyse.intervals import Interval, mean_interval


@dataclass
class Row:
    benchmark: str
    label: str
    table: str
    metric: str  # as the page names it, with its unit (Figure.title)
    unit: str
    run: int
    runs: int
    latest: Figure
    configs: int
    regressed: int
    previous_pct: float
    verdict: str
    baseline: str
    baseline_pct: float
    baseline_verdict: str
    ci: Interval | None = None  # the latest figure's 99 % t interval of its mean (unknown: n = 1)
    # the headline's judgements against the run before and the baseline: their ratio's interval
    previous: Verdict[Figure] | None = None
    against_baseline: Verdict[Figure] | None = None
    compared: int = 1  # the configurations the headline is the best of (of the largest problem)


def _best(figures: list[Figure]) -> Figure:
    """The configuration the row shows: the best by the stored direction (the first when it is
    unknown) among the configurations of the largest problem (`comparable`)."""
    figures = comparable(figures)
    way = figures[0].direction
    if way not in ("higher", "lower"):
        return figures[0]
    return max(figures, key=lambda f: f.mean if way == "higher" else -f.mean)


def comparable(figures: list[Figure]) -> list[Figure]:
    """The figures of the largest problem: those that agree, with the largest values, on every
    parameter that varies among them, holds sizes and names no hardware (pages.axes.is_scaling)."""
    sizes = sorted(key for key in figures[0].row if _is_size(key, figures))
    return _of_largest_problem(figures, sizes) if sizes else figures


def _is_size(key: str, figures: list[Figure]) -> bool:
    """Whether parameter `key` makes different problems among `figures`: it names no hardware,
    varies, and every value is a size (a number, or `117M`, `13B`)."""
    if is_scaling(key):
        return False
    values = [f.row.get(key, "") for f in figures]
    return len(set(values)) > 1 and all(axis_value(v) is not None for v in values)


def _of_largest_problem(figures: list[Figure], sizes: list[str]) -> list[Figure]:
    """The figures with the largest values of the `sizes` parameters, compared in order."""
    largest = max(_problem(f, sizes) for f in figures)
    return [f for f in figures if _problem(f, sizes) == largest]


def _problem(figure: Figure, keys: list[str]) -> tuple[float, ...]:
    """A configuration's problem size: its size parameters' values (117M, 13B read as numbers)."""
    return tuple(axis_value(figure.row.get(key, "")) or 0.0 for key in keys)


def metric_title(figure: Figure) -> str:
    """The metric with its unit once: `GEMM(GFLOP/s)`, never `GEMM(GFLOP/s) [GFLOP/s]`."""
    return titled_metric(figure.name, figure.unit, figure.aggregate)


def _verdict(
    latest: list[Figure], before: dict[str, Figure], headline: Figure
) -> tuple[str, int, float]:
    """The row's verdict over every configuration of the latest run against the run before (by
    configuration), how many regressed, and the headline's change in %."""
    verdicts = judged_words([(f, before[f.config]) for f in latest if f.config in before])
    word = _verdict_word(verdicts, headline.unstable)
    return word, verdicts.count("regressed"), _change(headline, before.get(headline.config))


def _verdict_word(verdicts: list[str], unstable: bool) -> str:
    """The first that holds: "first run" (no run before), "regressed" (any), "unstable" (the
    headline), "improved" (any), "cannot judge" (any: undecided, one sample, a direction unknown:
    history.compare), else "within noise"."""
    if not verdicts:
        return "first run"
    rules = (
        ("regressed" in verdicts, "regressed"),
        (unstable, "unstable"),
        ("improved" in verdicts, "improved"),
        ("cannot judge" in verdicts, "cannot judge"),
    )
    return next((word for holds, word in rules if holds), "within noise")


def _change(headline: Figure, before: Figure | None) -> float:
    """The headline's change in % against the run before's figure (NaN: none, or a zero mean)."""
    if before is None or not before.mean:
        return math.nan
    return 100.0 * (headline.mean - before.mean) / abs(before.mean)


def _baseline(
    coll: Collection, label: str, bench: str, wanted: str | None
) -> tuple[str, int] | None:
    keys = {r.record.run_key: r for r in coll.runs}
    for name in sorted(coll.baselines):
        if wanted and name != wanted:
            continue
        run = keys.get(coll.baselines[name])
        if run is not None and run.label == label and run.record.benchmark == bench:
            return name, run.index
    return None


@dataclass
class _Group:
    """The figures of one summary row: a benchmark's metric on one system label, per run index."""

    bench: str
    label: str
    metric: MetricKey
    per_run: dict[int, list[Figure]]


@dataclass(frozen=True)
class _AgainstBaseline:
    """A headline against the named baseline's figure of its configuration."""

    name: str = ""  # the baseline's ("": none of this benchmark and system)
    pct: float = math.nan  # the change in % (NaN: the baseline's run lacks the configuration)
    verdict: str = "no baseline"
    judged: Verdict[Figure] | None = None


def rows(coll: Collection, baseline: str | None = None) -> list[Row]:
    """The summary's rows, by benchmark, system label and metric; `baseline`: the baseline's name
    the rows compare with (None: the first by name of each benchmark and system)."""
    return [_row(coll, group, baseline) for group in _groups(coll)]


def _groups(coll: Collection) -> list[_Group]:
    """The plotted figures by benchmark, system label and metric (sorted), each by run."""
    grouped: dict[tuple[str, str, MetricKey], dict[int, list[Figure]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for f in coll.figures:
        if not plotted(f.name):
            continue
        run = coll.runs[f.run]
        grouped[(run.record.benchmark, run.label, f.metric)][f.run].append(f)
    return [_Group(*key, per_run) for key, per_run in sorted(grouped.items())]


def _row(coll: Collection, group: _Group, baseline: str | None) -> Row:
    """One row: the latest run's headline against the run before and the baseline."""
    per_run = group.per_run
    order = sorted(per_run, key=lambda i: coll.runs[i].record.started or 0)
    latest = per_run[order[-1]]
    headline = _best(latest)
    before = {f.config: f for f in per_run[order[-2]]} if len(order) > 1 else {}
    verdict, regressed, change = _verdict(latest, before, headline)
    last = before.get(headline.config)
    against = _against_baseline(coll, group, headline, baseline)
    # the figures may be thinned: the runs counted before
    runs = coll.run_counts.get((group.bench, group.label, headline.metric), len(order))
    return Row(
        group.bench,
        group.label,
        group.metric[0],
        metric_title(headline),
        headline.unit,
        headline.run,
        runs,
        headline,
        len(latest),
        regressed,
        change,
        verdict,
        against.name,
        against.pct,
        against.verdict,
        mean_interval(headline.mean, headline.sd, headline.n),
        None if last is None else judgement(headline, last),
        against.judged,
        len(comparable(latest)),
    )


def _against_baseline(
    coll: Collection, group: _Group, headline: Figure, wanted: str | None
) -> _AgainstBaseline:
    """`headline` judged against the baseline (`wanted`, or the first by name) of its benchmark
    and system."""
    found = _baseline(coll, group.label, group.bench, wanted)
    if found is None:
        return _AgainstBaseline()
    name, index = found
    base = next((f for f in group.per_run.get(index, []) if f.config == headline.config), None)
    if base is None:
        return _AgainstBaseline(name)
    judged = judgement(headline, base)
    return _AgainstBaseline(name, judged.diff_pct, judged.verdict, judged)
