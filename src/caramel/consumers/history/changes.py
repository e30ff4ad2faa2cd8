"""Change points in the history: where a series of runs (a benchmark x system x configuration x
figure over time) steps up or down, by how much, and what changed in the system at that moment.

Detection is `ruptures` (C. Truong et al., maintained, numpy/scipy only): its kernel change-point
search with the linear kernel, which is the least-squares segmentation of PELT (Killick et al. 2012)
solved exactly in C, with a penalty per change. It runs on the log of the figures, scaled by the
series' own noise (the median absolute difference of neighbours, robust to the steps themselves),
so one penalty fits every series and a 5 % step means the same on any figure. Each segment boundary
found is then tested: Welch's t-test between the runs before and after it (up to the neighbouring
boundaries; scipy), kept where p < `alpha`; its size is the ratio of the means with its interval
(stages/analyse/intervals.ratio_interval). Whether it is a regression follows the figure's
direction; a figure without one says `changed`.

Causes: the provenance and fingerprint items that differ between the last run before and the
first run after (driver, CUDA, kernel, image digest, modules, versions, the benchmark's commit, the
nodes...). Change points of several series whose first run after is the same run time (within
`window` runs) are one event.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from caramel.stages.analyse.intervals import ratio_interval
from caramel.vocabulary import Direction

MIN_RUNS = 8  # fewer runs than this: too few to find a change (says so)
MIN_SEGMENT = 3  # runs on each side of a change at least
PENALTY = 2.0  # per change, times log(n), on the noise-scaled log figures (perf/change_points.py)
ALPHA = 0.001  # Welch's test per boundary


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


def boundaries(values: Sequence[float] | np.ndarray, penalty: float = PENALTY) -> list[int]:
    """The indices where a new segment starts in `values` (positive figures), before testing."""
    import ruptures

    x = np.log(np.asarray(values, dtype=float))
    n = len(x)
    if n < 2 * MIN_SEGMENT:
        return []
    noise = np.median(np.abs(np.diff(x))) / (0.6745 * math.sqrt(2))  # sd of one run, robust
    if not noise > 0:
        noise = float(np.std(x)) or 1.0
    scaled = ((x - np.median(x)) / noise).reshape(-1, 1)
    search = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT, jump=1).fit(scaled)
    found = search.predict(pen=penalty * math.log(n))
    return [int(b) for b in found[:-1]]  # the last one is the series' end


def _sums(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative sums of the log figures and of their squares, from 0 (the figures centred on
    their median: the sums of squares near 0 lose no digits; p is shift-free)."""
    centred = logs - np.median(logs)
    return (
        np.concatenate(([0.0], np.cumsum(centred))),
        np.concatenate(([0.0], np.cumsum(centred * centred))),
    )


def _welch_from_sums(
    s1: np.ndarray, s2: np.ndarray, first: np.ndarray, cut: np.ndarray, last: np.ndarray
) -> np.ndarray:
    """Welch's two-sided p-value between the runs [first, cut) and [cut, last), for arrays of
    boundaries at once (scipy.stats.ttest_ind's formula; scipy.special.stdtr for the t tail, without
    ttest_ind's per-call cost). No spread on either side: 0 where the means differ, else 1."""
    from scipy.special import stdtr

    nb, na = (cut - first).astype(float), (last - cut).astype(float)
    mb, ma = (s1[cut] - s1[first]) / nb, (s1[last] - s1[cut]) / na
    vb = np.maximum((s2[cut] - s2[first]) - nb * mb * mb, 0.0) / (nb - 1) / nb
    va = np.maximum((s2[last] - s2[cut]) - na * ma * ma, 0.0) / (na - 1) / na
    spread = va + vb
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (ma - mb) / np.sqrt(spread)
        df = spread**2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        p = 2 * stdtr(df, -np.abs(t))
    p = np.where(spread > 0, p, np.where(ma != mb, 0.0, 1.0))
    return np.asarray(np.nan_to_num(p, nan=1.0), dtype=float)


def _welch_one(s1: np.ndarray, s2: np.ndarray, first: int, cut: int, last: int) -> float:
    """_welch_from_sums for one boundary, in Python floats (a numpy call on arrays of one costs
    tens of microseconds, and merging boundaries asks for two at a time, thousands of times)."""
    from scipy.special import stdtr

    nb, na = float(cut - first), float(last - cut)
    mb, ma = float(s1[cut] - s1[first]) / nb, float(s1[last] - s1[cut]) / na
    vb = max(float(s2[cut] - s2[first]) - nb * mb * mb, 0.0) / (nb - 1) / nb
    va = max(float(s2[last] - s2[cut]) - na * ma * ma, 0.0) / (na - 1) / na
    spread = va + vb
    if not spread > 0:
        return 0.0 if ma != mb else 1.0
    t = (ma - mb) / math.sqrt(spread)
    df = spread**2 / (va**2 / (na - 1) + vb**2 / (nb - 1)) if va or vb else math.inf
    p = 2 * float(stdtr(df, -abs(t)))
    return p if math.isfinite(p) else 1.0


def welch_p_values(logs: np.ndarray, cuts: Sequence[int]) -> np.ndarray:
    """Welch's two-sided p-value of each boundary in `cuts` between the runs before it and after it
    (up to the neighbouring boundaries), on the log figures, all at once."""
    s1, s2 = _sums(logs)
    edges = np.asarray([0, *cuts, len(logs)])
    return _welch_from_sums(s1, s2, edges[:-2], edges[1:-1], edges[2:])


def significant(values: np.ndarray, cuts: list[int], alpha: float) -> tuple[list[int], list[float]]:
    """The boundaries that hold: each tested between its neighbouring segments, the weakest one
    (highest p) merged away while it is not significant, then its two neighbours tested again (a
    boundary between two long segments has the power a short one lacks; the others' segments did
    not change, nor their p)."""
    s1, s2 = _sums(np.log(values))
    cuts = list(cuts)
    edges = np.asarray([0, *cuts, len(values)])
    p_values = list(_welch_from_sums(s1, s2, edges[:-2], edges[1:-1], edges[2:]))
    while cuts:
        weakest = int(np.argmax(p_values))
        if p_values[weakest] < alpha:
            return cuts, [float(p) for p in p_values]
        del cuts[weakest], p_values[weakest]
        edges = np.asarray([0, *cuts, len(values)])
        for k in (weakest - 1, weakest):
            if 0 <= k < len(cuts):
                p_values[k] = _welch_one(
                    s1, s2, int(edges[k]), int(edges[k + 1]), int(edges[k + 2])
                )
    return [], []


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
    alpha: float = ALPHA,
    penalty: float = PENALTY,
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
    alpha: float = ALPHA,
    penalty: float = PENALTY,
) -> list[ChangePoint]:
    """series_changes on columns: the figures in time order, their runs' keys and times."""
    if len(values) < MIN_RUNS or not np.all(values > 0):
        return []
    cuts, p_values = significant(values, boundaries(values, penalty), alpha)
    edges = [0, *cuts, len(values)]
    out = []
    for k, (cut, p_value) in enumerate(zip(cuts, p_values, strict=True), start=1):
        before, after = values[edges[k - 1] : cut], values[cut : edges[k + 1]]
        r = ratio_interval(
            after.mean(), after.std(ddof=1), len(after),
            before.mean(), before.std(ddof=1), len(before),
        )  # fmt: skip
        ratio = float(r.ratio)
        out.append(
            ChangePoint(
                series, unit, direction, cut, str(runs[cut - 1]), str(runs[cut]),
                str(times[cut]), ratio, float(r.low), float(r.high), p_value,
                _kind(ratio, direction),
            )
        )  # fmt: skip
    return out


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
    provenance: Mapping[str, Mapping[str, object]],
    runs: Sequence[str],
    window: int = 2,
) -> list[ChangePoint]:
    """Each change point with what changed in the system near it: the provenance items (by run key;
    `runs` in the history's order) that differ between neighbouring runs within `window` runs of
    its first run after (a change's place is known to a run or two), less the volatile ones."""
    from dataclasses import replace

    position = {run: i for i, run in enumerate(runs)}
    noisy = volatile_items(provenance, runs)
    out = []
    for change in changes:
        at = position.get(change.run_after)
        found: list[str] = []
        if at is not None:
            for i in range(max(1, at - window), min(len(runs), at + window + 1)):
                before, after = provenance.get(runs[i - 1], {}), provenance.get(runs[i], {})
                found += [c for c in causes(before, after) if c.split(":")[0] not in noisy]
        out.append(replace(change, causes=tuple(dict.fromkeys(found))))
    return out


def group_events(
    changes: Iterable[ChangePoint], run_order: Mapping[str, int], window: int = 2
) -> list[Event]:
    """Change points whose first run after lies within `window` runs of each other (in the history's
    order of runs, `run_order`) are one event; events ordered by time, then size."""
    ordered = sorted(changes, key=lambda c: (run_order.get(c.run_after, 0), c.series))
    groups: list[list[ChangePoint]] = []
    for change in ordered:
        position = run_order.get(change.run_after, 0)
        if groups and position - run_order.get(groups[-1][0].run_after, 0) <= window:
            groups[-1].append(change)
        else:
            groups.append([change])
    events = []
    for group in groups:
        shared = set(group[0].causes)
        for change in group[1:]:
            shared &= set(change.causes)
        causes_here = tuple(sorted(shared)) or group[0].causes
        events.append(Event(group[0].time_after, group[0].run_after, tuple(group), causes_here))
    return events
