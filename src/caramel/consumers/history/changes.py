"""Change points in the history: where a series of runs (a benchmark x system x configuration x
figure over time) steps up or down, by how much, and what changed in the system at that moment.

Detection is the exact least-squares segmentation with a penalty per change (ruptures' kernel
search with the linear kernel, C. Truong et al.; changes_search.boundaries_of). It runs on the log
of the figures, scaled by the series' own noise (the median absolute difference of neighbours,
robust to the steps themselves), so one penalty fits every series and a 5 % step means the same on
any figure. Each segment boundary found is then tested: Welch's t-test between the runs before and
after it (up to the neighbouring boundaries; scipy), kept where p < `alpha`; its size is the ratio
of the means with its interval (stages/analyse/intervals.ratio_interval). Whether it is a
regression follows the figure's direction; a figure without one says `changed`.

Causes: the provenance and fingerprint items that differ between the last run before and the
first run after (driver, CUDA, kernel, image digest, modules, versions, the benchmark's commit, the
nodes...). Change points of several series whose first run after is the same run time (within
`window` runs) are one event.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from caramel.consumers.history import changes_search as search
from caramel.consumers.history.compare import DEFAULT_THRESHOLD
from caramel.stages.analyse.intervals import ratio_interval
from caramel.vocabulary import Direction

MIN_RUNS = 8  # fewer runs than this: too few to find a change (says so)
# a series' false flags from the tests at the moments its system changed, at most (find)
MOMENT_ALPHA = 0.02
THRESHOLD = DEFAULT_THRESHOLD  # percent: the band of no change, as bench compare's


class ChangeKind(str, enum.Enum):
    """Which way a change went for the figure's user."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    CHANGED = "changed"  # the figure's direction is unknown


@dataclass(frozen=True)
class Point:
    """One run's figure in a series: when, which run, the estimate, and the run's provenance."""

    time: str  # ISO time of the run (orders the series)
    run: str  # the run's key
    value: float


@dataclass(frozen=True)
class ChangePoint:
    series: tuple[str, ...]  # benchmark, system, configuration, figure
    unit: str
    direction: Direction
    index: int  # the first run after the change, in the series' order
    run_before: str
    run_after: str
    time_after: str
    ratio: float  # mean after / mean before
    low: float  # the ratio's interval
    high: float
    p_value: float
    kind: ChangeKind
    causes: tuple[str, ...] = ()

    def describe(self) -> str:
        pct = (self.ratio - 1) * 100
        span = f"[{(self.low - 1) * 100:+.1f} %, {(self.high - 1) * 100:+.1f} %]"
        return (
            f"{'/'.join(self.series)}: {self.kind.value} {pct:+.1f} % {span} "
            f"({self.unit or 'no unit'}"
            f", p = {self.p_value:.1g}) between {self.run_before} and {self.run_after}"
        )


@dataclass(frozen=True)
class Event:
    """Change points of several series at the same moment: one cause, counted once."""

    time_after: str
    run_after: str
    changes: tuple[ChangePoint, ...]
    causes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        benchmarks = {c.series[0] for c in self.changes}
        kinds = sorted({c.kind.value for c in self.changes})
        sizes = [abs(c.ratio - 1) * 100 for c in self.changes]
        why = f"after {'; '.join(self.causes)}, " if self.causes else ""
        return (
            f"{self.time_after}: {why}{len(self.changes)} series of {len(benchmarks)} benchmark(s) "
            f"{'/'.join(kinds)} {min(sizes):.0f}-{max(sizes):.0f} %"
        )


def system_changes(
    provenance: Mapping[str, Mapping[str, object]], runs: Sequence[str]
) -> list[tuple[str, ...]]:
    """Per run of the history (`runs` in order): what of its system differs from the run before
    (causes: a driver, an image, a module), the volatile items left out; () for the first run.
    The moments the system changed and the causes of each change point are read from it."""
    noisy = volatile_items(provenance, runs)
    changed: list[tuple[str, ...]] = [()]
    for before, after in zip(runs[:-1], runs[1:], strict=True):
        found = causes(provenance.get(before, {}), provenance.get(after, {}))
        changed.append(tuple(c for c in found if c.split(":")[0] not in noisy))
    return changed


def series_moments(history_moments: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The system's changes as a series sees them: point j's run follows a change if the system
    changed at any run after point j-1's run and up to point j's (`positions`: the points' indices
    in the history's runs, increasing)."""
    counts = np.cumsum(history_moments)
    at = counts[positions]
    return np.concatenate(([False], np.diff(at) > 0))


def _kind(ratio: float, direction: Direction) -> ChangeKind:
    if direction is Direction.UNKNOWN:
        return ChangeKind.CHANGED
    better = ratio > 1 if direction is Direction.HIGHER else ratio < 1
    return ChangeKind.IMPROVEMENT if better else ChangeKind.REGRESSION


def series_changes(
    series: tuple[str, ...],
    points: Sequence[Point],
    unit: str = "",
    direction: Direction = Direction.UNKNOWN,
    alpha: float = search.ALPHA,
    penalty: float = search.PENALTY,
) -> list[ChangePoint]:
    """The tested change points of one series (points in time order, values positive)."""
    values = np.asarray([p.value for p in points], dtype=float)
    runs = [p.run for p in points]
    times = [p.time for p in points]
    return array_changes(series, values, runs, times, unit, direction, alpha, penalty)


def array_changes(
    series: tuple[str, ...],
    values: np.ndarray,
    runs: Sequence[str],
    times: Sequence[str],
    unit: str = "",
    direction: Direction = Direction.UNKNOWN,
    alpha: float = search.ALPHA,
    penalty: float = search.PENALTY,
    moments: np.ndarray | None = None,
) -> list[ChangePoint]:
    """series_changes on columns: the figures in time order, their runs' keys and times; where
    the system changed (`moments`, series_moments), a boundary the data cannot place more
    precisely goes there."""
    if len(values) < MIN_RUNS or not np.all(values > 0):
        return []
    one = Series(series, values, np.arange(len(values)), unit, direction)
    return _judged(one, moments, runs, times, alpha, penalty)


def _judged(
    one: Series,
    moments: np.ndarray | None,
    runs: Sequence[str],
    times: Sequence[str],
    alpha: float = search.ALPHA,
    penalty: float = search.PENALTY,
) -> list[ChangePoint]:
    """One series' change points (_judged_all)."""
    return _judged_all([one], [moments], runs, times, alpha, penalty)


def _judged_all(
    series: Sequence[Series], moments: Sequence[np.ndarray | None],
    runs: Sequence[str], times: Sequence[str],
    alpha: float = search.ALPHA, penalty: float = search.PENALTY,
    moment_alpha: float = MOMENT_ALPHA, threshold: float = THRESHOLD,
) -> list[ChangePoint]:  # fmt: skip
    """The change points of `series` (each with the moments its system changed, or None): their
    outliers set aside (search.without_outliers_of), the search's boundaries (search.found_of)
    placed (search.settled_of), each series' system moments tested where given
    (search.with_moments_of), each
    boundary's p-value between its neighbours; a change whose interval lies within the band of no
    change (`threshold` %) is none. The search and the tests of its boundaries work on every
    series at once, the rest series by series."""
    kept = search.without_outliers_of([one.values for one in series])
    cuts = search.settled_of(kept, search.found_of(kept, alpha, penalty), moments, alpha)
    logs = [np.log(values) for values in kept]
    cuts = search.with_moments_of(logs, cuts, moments, moment_alpha)
    p_values = search.welch_p_values_of(logs, cuts)
    found = _change_points_of(series, kept, cuts, p_values, runs, times)
    out: list[ChangePoint] = []
    for k, one in enumerate(series):
        out += _without_small(one, kept[k], cuts[k], found[k], runs, times, threshold)
    return out


def _without_small(
    one: Series, kept: np.ndarray, cuts: list[int], found: list[ChangePoint],
    runs: Sequence[str], times: Sequence[str], threshold: float,
) -> list[ChangePoint]:  # fmt: skip
    """A series' change points `found` at its boundaries `cuts` but those too small to matter
    (_no_change): the smallest goes, and its neighbours are measured again between the boundaries
    left, while one is."""
    while small := [c for c in found if _no_change(c, threshold)]:
        smallest = min(small, key=lambda c: abs(math.log(c.ratio))).index
        cuts = [cut for cut in cuts if cut != smallest]
        p_values = search.welch_p_values(np.log(kept), cuts)
        found = _change_points_of([one], [kept], [cuts], [p_values], runs, times)[0]
    return found


def _no_change(change: ChangePoint, threshold: float) -> bool:
    """Whether a change's interval lies within the band of no change, 1/(1 + threshold %) to
    1 + threshold % (bench compare's rule, consumers/history/compare.decide): real, but too small
    to matter (a 0.3 % shift that hundreds of quiet runs make significant)."""
    band = 1 + threshold / 100
    return 1 / band <= change.low and change.high <= band


def _change_points_of(
    series: Sequence[Series], kept: Sequence[np.ndarray], cuts: Sequence[Sequence[int]],
    p_values: Sequence[np.ndarray], runs: Sequence[str], times: Sequence[str],
) -> list[list[ChangePoint]]:  # fmt: skip
    """The boundaries `cuts` of each series (its figures `kept`, outliers set aside) as change
    points: the ratio of the means after and before (up to the neighbouring boundaries) with its
    interval, the runs either side, the kind. The segments of every series are one array (each
    series' boundaries offset by the figures before it), their intervals one call."""
    rows = [i for i, at in enumerate(cuts) if len(at)]
    out: list[list[ChangePoint]] = [[] for _ in series]
    if not rows:
        return out
    offsets = np.cumsum([0, *(len(kept[i]) for i in rows)])
    edges = np.concatenate([np.asarray([0, *cuts[i]]) + offsets[k] for k, i in enumerate(rows)])
    values = np.concatenate([kept[i] for i in rows])
    counts = np.diff(np.append(edges, len(values)))
    means = np.add.reduceat(values, edges) / counts
    spread = np.add.reduceat((values - np.repeat(means, counts)) ** 2, edges)
    sds = np.sqrt(spread / np.maximum(counts - 1, 1))
    # every boundary at once: after (a series' segment k > 0) over before (its segment k - 1)
    after = np.flatnonzero(~np.isin(edges, offsets[:-1]))
    r = ratio_interval(
        means[after], sds[after], counts[after],
        means[after - 1], sds[after - 1], counts[after - 1],
    )  # fmt: skip
    done = 0
    for i in rows:
        one, at = series[i], series[i].positions
        for k, cut in enumerate(cuts[i]):
            ratio = float(r.ratio[done + k])
            out[i].append(
                ChangePoint(
                    one.label, one.unit, one.direction, int(cut), str(runs[at[cut - 1]]),
                    str(runs[at[cut]]), str(times[at[cut]]), ratio, float(r.low[done + k]),
                    float(r.high[done + k]), float(p_values[i][k]), _kind(ratio, one.direction),
                )
            )  # fmt: skip
        done += len(cuts[i])
    return out


@dataclass(frozen=True)
class Series:
    """One series as find() takes it: its figures in time order and each one's run."""

    label: tuple[str, ...]  # benchmark, system, configuration, figure
    values: np.ndarray  # the figures (positive), in time order
    positions: np.ndarray  # each figure's run: its index in the history's runs, increasing
    unit: str = ""
    direction: Direction = Direction.UNKNOWN


def find(
    series: Iterable[Series],
    runs: Sequence[str],
    times: Sequence[str],
    provenance: Mapping[str, Mapping[str, object]],
    moment_alpha: float = MOMENT_ALPHA,
    threshold: float = THRESHOLD,
) -> tuple[list[ChangePoint], list[Event]]:
    """The change points of every series of a history and their events. `runs` are the history's
    run keys in time order, `times` their ISO times, `provenance` their items by run key.

    Each series is judged on its own (_judged_all, the search and tests of every series at once):
    its isolated outliers set aside, the exact least-squares search and Welch's test, each
    boundary placed at a system change the data cannot tell from it; then the moments the system
    changed that its boundaries do not explain are tested in it (hypotheses named before looking,
    so without the search's penalty, at `moment_alpha` shared among them), so a driver update that
    moved a series by less than the search could see is found where it happened. A change whose
    interval lies within the band of no change (`threshold` %, bench compare's default) is
    none."""
    changed = system_changes(provenance, runs)
    history_moments = np.array([bool(c) for c in changed], dtype=bool)
    judged = [one for one in series if len(one.values) >= MIN_RUNS and np.all(one.values > 0)]
    moments = [series_moments(history_moments, one.positions) for one in judged]
    changes = _judged_all(
        judged, moments, runs, times, moment_alpha=moment_alpha, threshold=threshold
    )
    changes = with_causes(changes, changed, runs)
    order = {key: i for i, key in enumerate(runs)}
    return changes, group_events(changes, order, moments=np.flatnonzero(history_moments).tolist())


def causes(before: Mapping[str, object], after: Mapping[str, object]) -> tuple[str, ...]:
    """What differs between two runs' provenance and fingerprint (flattened `key: value` items):
    `driver: 550.54 -> 560.28`, `image_digest: sha256:ab.. -> sha256:cd..`, `+ module: x`."""
    out = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if old is None:
            out.append(f"{key}: (none) -> {new}")
        elif new is None:
            out.append(f"{key}: {old} -> (none)")
        else:
            out.append(f"{key}: {old} -> {new}")
    return tuple(out)


VOLATILE = (
    0.25  # an item that changes between more than this share of neighbouring runs is no cause
)


def volatile_items(provenance: Mapping[str, Mapping[str, object]], runs: Sequence[str]) -> set[str]:
    """The items that change often between neighbouring runs (the node a job landed on, a date):
    listed as causes they would hide the one that matters."""
    changed: dict[str, int] = {}
    for old, new in zip(runs[:-1], runs[1:], strict=True):
        a, b = provenance.get(old, {}), provenance.get(new, {})
        for key in set(a) | set(b):
            changed[key] = changed.get(key, 0) + (a.get(key) != b.get(key))
    pairs = max(1, len(runs) - 1)
    return {key for key, count in changed.items() if count / pairs > VOLATILE}


def with_causes(
    changes: Iterable[ChangePoint],
    changed: Sequence[tuple[str, ...]],
    runs: Sequence[str],
    window: int = 2,
) -> list[ChangePoint]:
    """Each change point with what changed in the system at it (`changed`: system_changes, per run
    of `runs`, the history's order): what differs between its last run before and its first run
    after, or where nothing did, between neighbouring runs within `window` runs of its first run
    after (a change's place is known to a run or two)."""
    from dataclasses import replace

    position = {run: i for i, run in enumerate(runs)}
    out = []
    for change in changes:
        at = position.get(change.run_after)
        found: list[str] = []
        if at is not None and at > 0:
            near = range(max(1, at - window), min(len(runs), at + window + 1))
            found = list(changed[at]) or [c for i in near for c in changed[i]]
        out.append(replace(change, causes=tuple(dict.fromkeys(found))))
    return out


def group_events(
    changes: Iterable[ChangePoint],
    run_order: Mapping[str, int],
    window: int = 2,
    moments: Sequence[int] = (),
) -> list[Event]:
    """Change points whose first run after lies within `window` runs of each other (in the history's
    order of runs, `run_order`) are one event; where the system changed (`moments`, positions in
    that order), the changes at or near each such moment are its event, so two updates a few runs
    apart stay two events. Events in time order."""
    anchors = sorted(moments)
    groups: dict[int, list[ChangePoint]] = {}
    loose: list[tuple[int, ChangePoint]] = []
    for change in changes:
        position = run_order.get(change.run_after, 0)
        nearest = min(anchors, key=lambda m: (abs(m - position), m), default=None)
        if nearest is not None and abs(nearest - position) <= window:
            groups.setdefault(nearest, []).append(change)
        else:
            loose.append((position, change))
    start = None
    for position, change in sorted(loose, key=lambda item: (item[0], item[1].series)):
        if start is None or position - start > window:
            start = position
        groups.setdefault(start, []).append(change)
    return [
        _event(sorted(groups[k], key=_in_time(run_order)), run_order, k) for k in sorted(groups)
    ]


def _in_time(run_order: Mapping[str, int]) -> Callable[[ChangePoint], tuple[int, tuple[str, ...]]]:
    return lambda c: (run_order.get(c.run_after, 0), c.series)


def _event(group: list[ChangePoint], run_order: Mapping[str, int], at: int) -> Event:
    """One event of its changes (in time order), at the moment `at` (a position in `run_order`)
    where one of them lies there, else at the first; its causes: those they share, else the
    first one's."""
    shared = set(group[0].causes)
    for change in group[1:]:
        shared &= set(change.causes)
    causes_here = tuple(sorted(shared)) or group[0].causes
    there = next((c for c in group if run_order.get(c.run_after) == at), group[0])
    return Event(there.time_after, there.run_after, tuple(group), causes_here)
