"""The Mila methodology table: each benchmark against its reference on this system, then three
criteria.

Per reference (history/targets.py): target, the interval the result must lie in, result (the mean
of its samples under the benchmark's estimator, analyse/estimators.py) with its 99 % confidence
interval (analyse/intervals.py: Student's t for a mean, the bootstrap for a trimmed mean; none with
one sample), n, sd, sd%, sem%, diff (result / target - 1, sign turned for figures where less is
better) and a verdict (by the result against its bounds, as ReFrame's; the interval informs it):

- pass / fail: the result inside / outside the interval, and the sd% within the benchmark's max_sd;
- cannot judge: the figure's direction is unknown (neither unit nor name says which way is better),
  or a max_sd is asked and the figure has one sample (no spread to judge);
- no figure: no figure of the runs matches the reference;
- no reference: a benchmark of the runs has no reference for the system it ran on.

A reference with a `unit` is converted into its figure's unit first (spec.quantities); units of
different dimensions are an error naming the targets file's line, both units and the benchmark. A
reference naming a column of the runs that is not a figure (a pattern without unit or direction,
a parameter, a column of no numbers) is an error saying which column and how to declare it.

Only a benchmark's result is judged: with copies, the aggregate the step declares (`caramel_copy`
sum or mean), never one copy's figure nor the spread rows. A copies aggregate is taken as
milabench's report takes its GPUs (analyse/estimators.py `pool`): the copies' lines pooled over
every repeat give the result (sum: the sum of each copy's estimate; mean: the estimate over the
pooled lines), and n, sd, sd% and sem% are the pooled lines', so a `max_sd` is judged on them.
Then: every benchmark passes; the 80 %
quantile of sd% over the figures with at least two samples is at most `max_sd` (none: cannot judge,
n = 1 is no proof of stability); the mean diff is not below -threshold. The campaign passes when all
three pass; `bench compare` exits 1 otherwise (a criterion that cannot be judged does not pass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.targets import ANY_SYSTEM, Entry, Reference, Targets
from caramel.errors import Location, RunError, did_you_mean
from caramel.stages.analyse.estimators import Summary, pool, summarise
from caramel.stages.analyse.intervals import LEVEL, Interval, copies_interval, interval
from caramel.stages.spec.estimator import DEFAULT, Estimator
from caramel.stages.spec.quantities import UnitMismatch, describe
from caramel.vocabulary import COPY_AGGREGATES, Direction, Word

NOT_A_FIGURE_HINT = (
    "a column is a figure when its pattern has a unit or a direction (<pattern "
    'name="t" unit="s">, YAML unit: s or direction: lower), docs/history.md'
)
DEFAULT_THRESHOLD = 5.0  # percent a result may fall short of its target
DEFAULT_MAX_SD = 5.0  # percent: the 80 % quantile of sd% must stay below this
COPY = "caramel_copy"


class Verdict(Word):
    """A methodology line's verdict against its reference."""

    PASS = "pass"
    FAIL = "fail"
    CANNOT_JUDGE = "cannot judge"
    NO_FIGURE = "no figure"
    NO_REFERENCE = "no reference"


@dataclass
class Line:
    name: str
    target: float
    result: float
    sd: float  # NaN: one sample, no spread
    sd_pct: float
    diff_pct: float
    threshold: float
    n: int
    sem_pct: float = math.nan
    low: float = -math.inf
    high: float = math.inf
    verdict: Verdict = Verdict.FAIL
    why: str = ""
    # the result's confidence interval (analyse/intervals.py), shown beside it; NaN and no method
    # with one sample. It informs: the verdict stays the result against its bounds.
    ci_low: float = math.nan
    ci_high: float = math.nan
    ci_method: str | None = None
    level: float = LEVEL

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS


@dataclass
class Methodology:
    lines: list[Line]
    missing: list[str] = field(default_factory=list)  # references no figure of the runs matches
    quantile_sd_pct: float = math.nan
    mean_diff_pct: float = math.nan
    max_sd: float = DEFAULT_MAX_SD
    threshold: float = DEFAULT_THRESHOLD
    system: str | None = ANY_SYSTEM
    captions: list[str] = field(default_factory=list)  # the estimators the results were taken with
    intervals: list[str] = field(default_factory=list)  # the methods of the results' intervals

    @property
    def criteria(self) -> list[tuple[str, float | None, bool | None]]:
        """(name, value, passed); passed None: cannot judge (it does not pass either)."""
        return [
            ("all benchmarks pass", None, bool(self.lines) and all(x.passed for x in self.lines)),
            (
                "deviation quantile (80%)",
                self.quantile_sd_pct,
                None if math.isnan(self.quantile_sd_pct) else self.quantile_sd_pct <= self.max_sd,
            ),
            (
                "mean performance diff",
                self.mean_diff_pct,
                None if math.isnan(self.mean_diff_pct) else self.mean_diff_pct >= -self.threshold,
            ),
        ]

    @property
    def passed(self) -> bool:
        return all(ok is True for _name, _value, ok in self.criteria)


def _names(benchmark: str, metric: Metric) -> set[str]:
    return {
        metric.name,
        f"{metric.table}/{metric.name}",
        f"{benchmark}/{metric.name}",
        metric.row.get("model", ""),
        benchmark,
    } - {""}


def _figure_names(metric: Metric) -> set[str]:
    return {
        metric.name,
        f"{metric.table}/{metric.name}",
        metric.unit,
        metric.row.get("metric", ""),
    } - {""}


def is_result(metric: Metric) -> bool:
    """A benchmark's result: not one copy's figure, not the spread over copies
    (report/copies.py)."""
    return COPY not in metric.row or metric.row[COPY] in COPY_AGGREGATES


def judge(
    figures: list[tuple[str, Metric]],
    targets: Targets | dict[str, object],
    threshold: float | None = None,
    max_sd: float | None = None,
    system_names: list[str] | None = None,
    estimators: dict[str, Estimator] | None = None,
    known: set[str] | None = None,
    benchmarks: list[str] | None = None,
    columns: dict[str, str] | None = None,
) -> Methodology:
    """`figures`: (benchmark, metric) of the runs; `system_names`: the run's system, then its tags;
    `estimators`: per benchmark; `known`: the benchmark names besides the runs' (the catalogue);
    `benchmarks`: the runs' benchmarks, those without a figure too (default: the figures');
    `columns`: the runs' columns that are not figures, with why (history.metrics.non_figures)."""
    targets = _as_targets(targets)
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    system_names = system_names or []
    figures, benchmarks = _results(figures, benchmarks or [])
    system, entries = targets.for_system(system_names)
    _check(targets, figures, system_names, (known or set()) | set(benchmarks), columns or {})
    out = Methodology(
        [], max_sd=DEFAULT_MAX_SD if max_sd is None else max_sd, threshold=threshold, system=system
    )
    judging = _Judging(
        targets, figures, threshold, estimators or {}, out, {e.name for e in entries}
    )
    for entry in entries:
        judging.add_entry(entry)
    if targets.systems:  # the per-system form: every benchmark of the runs needs a reference there
        judging.add_unreferenced(benchmarks, system, system_names)
    _statistics(out)
    return out


def _results(
    figures: list[tuple[str, Metric]], benchmarks: list[str]
) -> tuple[list[tuple[str, Metric]], list[str]]:
    """The runs' results (no copy's own figure, no spread: `is_result`) and their benchmarks after
    `benchmarks` (those with no figure)."""
    results = [(bench, m) for bench, m in figures if is_result(m)]
    return results, list(dict.fromkeys([*benchmarks, *(bench for bench, _m in results)]))


def _as_targets(targets: Targets | dict[str, object]) -> Targets:
    """Targets as read from a file; the flat form given as a mapping (tests and the API) too."""
    if not isinstance(targets, dict):
        return targets
    from caramel.consumers.history.targets import entry_from

    return Targets("", [entry_from("", k, v, ANY_SYSTEM, 0) for k, v in targets.items()], {})


def _unjudged(name: str, target: float, threshold: float, verdict: Verdict, why: str) -> Line:
    """A line of no result: a reference no figure matches, a benchmark with no reference."""
    nan = math.nan
    return Line(name, target, nan, nan, nan, nan, threshold, 0, verdict=verdict, why=why)


@dataclass
class _Judging:
    """What judging the references shares: the targets, the runs' results, the threshold, the
    estimators by benchmark, the Methodology filled, and the benchmarks that have a reference."""

    targets: Targets
    figures: list[tuple[str, Metric]]
    threshold: float
    estimators: dict[str, Estimator]
    out: Methodology
    referenced: set[str]

    def add_entry(self, entry: Entry) -> None:
        """The lines of an entry's references."""
        for key, reference in entry.figures.items():
            self.add_reference(entry, key, reference)

    def add_unreferenced(
        self, benchmarks: list[str], system: str | None, system_names: list[str]
    ) -> None:
        """A `no reference` line for each of the runs' benchmarks the system has no reference of
        (`system`: the file's system the run ran on, None when none: the run's own named)."""
        why = f"no reference for system {system or (system_names or ['?'])[0]}"
        self.out.lines += [
            _unjudged(bench, math.nan, self.threshold, Verdict.NO_REFERENCE, why)
            for bench in benchmarks
            if bench not in self.referenced
        ]

    def add_reference(self, entry: Entry, key: str, reference: Reference) -> None:
        """The lines of one reference (`key`: its figure, "" for the benchmark's only one): one per
        figure it matches; none matching, a `no figure` line."""
        found = [(b, m) for b, m in self.figures if _matches(entry.name, key, b, m)]
        label = entry.name + (f" {key}" if key else "")
        if not found:
            self.out.missing.append(label)
            self.out.lines.append(
                _unjudged(
                    label,
                    reference.value,
                    self.threshold,
                    Verdict.NO_FIGURE,
                    "no figure of the runs matches",
                )
            )
        for bench, metric in found:
            name = label + (f" [{metric.key}]" if len(found) > 1 else "")
            self.out.lines.append(self._judged(entry, key, reference, bench, metric, name))

    def _judged(
        self, entry: Entry, key: str, reference: Reference, bench: str, metric: Metric, name: str
    ) -> Line:
        """One figure's line against its reference (converted into the figure's unit), with the
        result's interval where it has one."""
        self.referenced.add(bench)
        estimator = self.estimators.get(bench, DEFAULT)
        self.out.captions.append(estimator.caption)
        try:
            converted = reference.in_unit(metric.unit)
        except UnitMismatch:
            raise _unit_mismatch(self.targets, entry, key, reference, bench, metric) from None
        result, spread = result_of(metric, estimator)
        line = _line(name, converted, entry, metric, result, spread, self.threshold)
        found_interval = interval_of(metric, estimator)
        if found_interval.known:
            line.ci_low, line.ci_high = found_interval.low, found_interval.high
            line.ci_method, line.level = found_interval.method, found_interval.level
            self.out.intervals.append(found_interval.label)
        return line


def _matches(name: str, key: str, bench: str, metric: Metric) -> bool:
    """Whether a reference (an entry's `name`, its figure `key`) names a figure with samples."""
    return (
        name in _names(bench, metric)
        and bool(metric.samples)
        and (not key or key in _figure_names(metric))
    )


def result_of(metric: Metric, estimator: Estimator) -> tuple[float, Summary]:
    """A figure's result and the summary its spread is judged by: a copies aggregate's pooled as
    milabench pools its GPUs (the module's doc), any other figure's samples (one per repeat)."""
    aggregate = metric.row.get(COPY)
    if metric.copies and aggregate in COPY_AGGREGATES:
        pooled = pool(metric.copies, estimator)
        return pooled.value(aggregate), pooled.spread
    summary = summarise(metric.samples, estimator)
    return summary.mean, summary


def interval_of(metric: Metric, estimator: Estimator) -> Interval:
    """The confidence interval of a figure's result (result_of): a copies aggregate's from each
    copy's lines (intervals.copies_interval), any other figure's from its samples (t for a mean,
    the bootstrap for a trimmed mean)."""
    aggregate = metric.row.get(COPY)
    if metric.copies and aggregate in COPY_AGGREGATES:
        return copies_interval(metric.copies, aggregate, estimator)
    return interval(metric.samples, estimator=estimator)


def _line(
    name: str,
    reference: Reference,
    entry: Entry,
    metric: Metric,
    result: float,
    summary: Summary,
    threshold: float,
) -> Line:
    # relative to the target's size: a result above a negative target is above it (+), as ReFrame's
    # thresholds are relative to |ref| (targets.bound_of)
    size = abs(reference.value)
    diff = (result - reference.value) / size * 100.0 if size else math.nan
    if metric.direction == Direction.LOWER:
        diff = -diff
    low, high = reference.bounds(str(metric.direction), threshold)
    line = Line(
        name,
        reference.value,
        result,
        summary.sd,
        summary.sd_pct,
        diff,
        reference.threshold if reference.threshold is not None else threshold,
        summary.n,
        summary.sem_pct,
        low,
        high,
    )
    line.verdict, line.why = _verdict(metric, entry.max_sd, summary, result, (low, high))
    return line


def _verdict(
    metric: Metric,
    max_sd: float | None,
    summary: Summary,
    result: float,
    bounds: tuple[float, float],
) -> tuple[Verdict, str]:
    """A result's verdict, with why: within its bounds, and of a spread within `max_sd` (percent)
    where the entry asks one; a figure of no known direction cannot be judged."""
    low, high = bounds
    if metric.direction not in (Direction.HIGHER, Direction.LOWER):
        return Verdict.CANNOT_JUDGE, f"the direction of {metric.name} is unknown"
    if not low <= result <= high:
        return Verdict.FAIL, f"{result:.6g} outside [{low:.6g}, {high:.6g}]"
    if max_sd is not None and not summary.has_spread:
        return Verdict.CANNOT_JUDGE, f"max_sd {max_sd:g}% asked, n = {summary.n}: no spread"
    if max_sd is not None and summary.sd_pct > max_sd:
        return Verdict.FAIL, f"sd {summary.sd_pct:.2f}% above max_sd {max_sd:g}%"
    return Verdict.PASS, ""


def _statistics(out: Methodology) -> None:
    """The spreads' 80 % quantile and the mean diff of the judged lines; each estimator's caption
    and interval method once."""
    import numpy as np

    out.captions = list(dict.fromkeys(out.captions))
    out.intervals = list(dict.fromkeys(out.intervals))
    spreads = [x.sd_pct for x in out.lines if not math.isnan(x.sd_pct)]
    diffs = [
        x.diff_pct
        for x in out.lines
        if x.verdict in (Verdict.PASS, Verdict.FAIL) and not math.isnan(x.diff_pct)
    ]
    if spreads:
        out.quantile_sd_pct = float(np.quantile(spreads, 0.8))
    if diffs:
        out.mean_diff_pct = float(np.mean(diffs))


def _unit_mismatch(
    targets: Targets, entry: Entry, key: str, reference: Reference, bench: str, metric: Metric
) -> RunError:
    """The error of a reference in a unit its figure cannot be converted into."""
    where = entry.figure_lines.get(key, entry.where)
    figure = f"'{entry.name}'" + (f" {key}" if key else "")
    return RunError(
        f"the target of {figure} is in '{reference.unit}' "
        f"({describe(reference.unit)}), "
        f"the figure {metric.name} of the run of {bench} in '{metric.unit}' "
        f"({describe(metric.unit)}); "
        "figures of different dimensions are never compared",
        where if where.file else Location(targets.path or "the targets", where.line),
        hint=f"give the target in a unit of the figure's dimension (unit: {metric.unit or '...'})",
    )


def _check(
    targets: Targets,
    figures: list[tuple[str, Metric]],
    system_names: list[str],
    known: set[str],
    columns: dict[str, str],
) -> None:
    """An entry for an unknown system, benchmark or figure is an error with did-you-mean; one naming
    a column that is not a figure says which and how to declare it."""
    if targets.systems:
        _check_systems(targets, system_names)
    names = set(known).union(*(_names(bench, metric) for bench, metric in figures))
    for entry in targets.entries:
        _check_benchmark(entry, names, known, columns)
        own = set().union(*[_figure_names(m) for b, m in figures if entry.name in _names(b, m)])
        for key, where in entry.figure_lines.items():
            _check_figure(entry.name, key, where, own, columns)


def _check_systems(targets: Targets, system_names: list[str]) -> None:
    """Every system the file names is shipped, or the run's (its system, its tags)."""
    from caramel.adapters.systems.loader import system_names as shipped_systems

    systems = set(shipped_systems()) | set(system_names)
    for system, where in targets.systems.items():
        if system not in systems:
            raise RunError(
                f"targets for an unknown system '{system}'",
                where,
                hint=did_you_mean(system, sorted(systems))
                or "systems: " + ", ".join(sorted(systems)),
            )


def _check_benchmark(
    entry: Entry, names: set[str], known: set[str], columns: dict[str, str]
) -> None:
    """An entry names a benchmark (or a model, a figure) of the runs or the catalogue."""
    if entry.name in names:
        return
    if entry.name in columns:
        raise RunError(
            f"target '{entry.name}': {columns[entry.name]}", entry.where, hint=NOT_A_FIGURE_HINT
        )
    raise RunError(
        f"targets for an unknown benchmark '{entry.name}'",
        entry.where,
        hint=did_you_mean(entry.name, sorted(names)) or "benchmarks: " + ", ".join(sorted(known)),
    )


def _check_figure(
    name: str, key: str, where: Location, own: set[str], columns: dict[str, str]
) -> None:
    """An entry's figure `key` is one of its benchmark's figures (`own`; none known: any)."""
    if key not in own and key in columns:
        raise RunError(
            f"target '{name}' figure '{key}': {columns[key]}", where, hint=NOT_A_FIGURE_HINT
        )
    if own and key not in own:
        raise RunError(
            f"targets for an unknown figure '{key}' of '{name}'",
            where,
            hint=did_you_mean(key, sorted(own)) or "figures: " + ", ".join(sorted(own)),
        )
