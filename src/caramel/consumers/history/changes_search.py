"""The statistics of change-point detection (consumers/history/changes uses them): the search for
segment boundaries (ruptures' exact penalised least-squares search), Welch's
test of each boundary between its neighbours, the boundaries' places (least squares, or a moment
the system changed that the data cannot tell from it), and the tests at the system's moments.

Everything works on the log of the figures, so a 5 % step means the same on any figure, and on
cumulative sums, so a test or a cost at every candidate run is one vectorised expression."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

MIN_SEGMENT = 3  # runs on each side of a change at least
PENALTY = 2.0  # per change, times log(n), on the noise-scaled log figures (perf/change_points.py)
ALPHA = 0.001  # Welch's test per boundary
# where a change may lie: the runs whose two-segment least-squares cost is within this many noise
# variances of the best (the likelihood-ratio set of Hinkley 1970; 10.6 bounds the limit law
# (1 - exp(-x/2))^2 of a step's location at 0.99)
LOCATION_LEVEL = 10.6
OUTLIER_SDS = 5.0  # a run this many noise sds from the runs around it is an outlier (no change)


def _noise_rows(logs: np.ndarray) -> np.ndarray:
    """The sd of one run's log figure in each row of `logs` (series of one length), robust to
    steps and outliers: the median absolute difference of neighbouring runs (scaled to an sd for
    normal noise); else the plain sd."""
    noise = np.median(np.abs(np.diff(logs, axis=1)), axis=1) / (0.6745 * math.sqrt(2))
    plain = np.std(logs, axis=1)
    return np.where(noise > 0, noise, np.where(plain > 0, plain, 1.0))


# figures worked on as one 2-d array at most (2 MB a float array): the series of one length go a
# block at a time, so a history's million figures never stand as several arrays of their own size
BLOCK_FIGURES = 1 << 18


def _by_length(series: Sequence[np.ndarray]) -> list[tuple[int, list[int]]]:
    """The indices of `series` by their length, in blocks of at most BLOCK_FIGURES figures: the
    series of one block are one 2-d array."""
    lengths: dict[int, list[int]] = {}
    for i, values in enumerate(series):
        lengths.setdefault(len(values), []).append(i)
    out = []
    for n, rows in lengths.items():
        step = max(1, BLOCK_FIGURES // max(n, 1))
        out += [(n, rows[start : start + step]) for start in range(0, len(rows), step)]
    return out


def without_outliers_of(series: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The figures of each of `series` with each outlier replaced by the median of the runs
    around it: a run further than OUTLIER_SDS noise sds (in log) from the median of the
    2 * MIN_SEGMENT + 1 runs around it. One slow run (a busy node, a bad day) is not a change; it
    would drag the mean of every segment it falls in. A median keeps a step's edge, so a step of
    MIN_SEGMENT runs or more stays whole, at the end of the series too (the window's edge repeats
    the last run). The series of one length are one array."""
    from scipy.ndimage import median_filter

    out = list(series)
    window = 2 * MIN_SEGMENT + 1
    for n, rows in _by_length(series):
        if n < window:
            continue
        values = np.stack([np.asarray(series[i], dtype=float) for i in rows])
        logs = np.log(values)
        around = median_filter(logs, size=(1, window), mode="nearest")  # along each series
        far = np.abs(logs - around) > OUTLIER_SDS * _noise_rows(logs)[:, None]
        for row in np.flatnonzero(far.any(axis=1)):
            out[rows[row]] = np.where(far[row], np.exp(around[row]), values[row])
    return out


def boundaries_of(series: Sequence[np.ndarray], penalty: float = PENALTY) -> list[list[int]]:
    """Where a new segment starts in each of `series` (positive figures), before testing:
    ruptures' exact penalised search (KernelCPD with the linear kernel: least squares about each
    segment's mean, its C search) on the log figures scaled by the series' noise, with `penalty` *
    log(n) per segment and segments of MIN_SEGMENT runs at least. The series of one length are
    scaled as one array; the search takes one series per call."""
    import ruptures  # 0.4 s (it loads scipy.stats): only where a series is searched

    out: list[list[int]] = [[] for _ in series]
    search = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT, jump=1)  # fit to each
    for n, rows in _by_length(series):
        if n < 2 * MIN_SEGMENT:
            continue
        x = np.log(np.stack([np.asarray(series[i], dtype=float) for i in rows]))
        x = (x - np.median(x, axis=1)[:, None]) / _noise_rows(x)[:, None]
        for i, scaled in zip(rows, x, strict=True):
            found = search.fit(scaled.reshape(-1, 1)).predict(pen=penalty * math.log(n))
            out[i] = [int(b) for b in found[:-1]]  # the last one is the series' end
    return out


def _sums(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative sums of the log figures and of their squares, from 0 (the figures centred on
    their mean: the sums of squares near 0 lose no digits; p is shift-free)."""
    s1, s2 = _sums_rows(logs[None, :])
    return s1[0], s2[0]


def _sums_rows(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_sums of each row of `logs` (series of one length)."""
    centred = logs - logs.mean(axis=1)[:, None]
    s1 = np.zeros((len(logs), logs.shape[1] + 1))
    s2 = np.zeros_like(s1)
    np.cumsum(centred, axis=1, out=s1[:, 1:])
    np.cumsum(centred * centred, axis=1, out=s2[:, 1:])
    return s1, s2


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
    p[np.isnan(p)] = 1.0  # as np.nan_to_num(p, nan=1.0), at a tenth of its cost per call
    return p


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
    return welch_p_values_of([logs], [cuts])[0]


def welch_p_values_of(
    logs: Sequence[np.ndarray], cuts: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """welch_p_values of each series (its log figures and boundaries), every boundary at once."""
    tests = []
    for x, at in zip(logs, cuts, strict=True):
        edges = np.asarray([0, *at, len(x)])
        tests.append((edges[:-2], edges[1:-1], edges[2:]))
    return _welch_of(logs, tests)


Tests = tuple[np.ndarray, np.ndarray, np.ndarray]  # Welch's tests of a series: first, cut, last


def _welch_of(logs: Sequence[np.ndarray], tests: Sequence[Tests]) -> list[np.ndarray]:
    """Welch's p-value between the runs [first, cut) and [cut, last) of each test of each series
    (`tests`, per series of `logs`), every test of the series of one length at once."""
    out = [np.zeros(0) for _ in logs]
    for _n, every in _by_length(logs):
        rows = [i for i in every if len(tests[i][0])]
        if rows:
            found = _welch_rows(np.stack([logs[i] for i in rows]), [tests[i] for i in rows])
            for i, p in zip(rows, found, strict=True):
                out[i] = p
    return out


def _welch_rows(logs: np.ndarray, tests: Sequence[Tests]) -> list[np.ndarray]:
    """_welch_of for the rows of `logs` (series of one length): their sums one array, a test's
    places in it offset by its row times (length + 1)."""
    s1, s2 = _sums_rows(logs)
    width = s1.shape[1]
    first, cut, last = (
        np.concatenate([test[k] + row * width for row, test in enumerate(tests)]) for k in range(3)
    )
    p_values = _welch_from_sums(s1.ravel(), s2.ravel(), first, cut, last)
    return np.split(p_values, np.cumsum([len(test[0]) for test in tests])[:-1])


def significant_of(
    series: Sequence[np.ndarray], cuts: Sequence[Sequence[int]], alpha: float
) -> list[list[int]]:
    """The boundaries `cuts` of each of `series` that hold: each tested between its neighbouring
    segments, the weakest one (highest p) merged away while it is not significant, then its two
    neighbours tested again (a boundary between two long segments has the power a short one lacks;
    the others' segments did not change, nor their p). The first p-values of every series at once
    (welch_p_values_of), the merging series by series where one is not significant."""
    logs = [np.log(values) for values in series]
    p_values = welch_p_values_of(logs, cuts)
    out: list[list[int]] = [[] for _ in series]
    for i, (x, p) in enumerate(zip(logs, p_values, strict=True)):
        if len(p) and p.max() < alpha:
            out[i] = list(cuts[i])
        elif len(p):
            out[i] = _merged(*_sums(x), list(cuts[i]), list(p), alpha)
    return out


def _merged(
    s1: np.ndarray, s2: np.ndarray, cuts: list[int], p_values: list[float], alpha: float
) -> list[int]:
    """significant_of's merging, from each boundary's p-value (`p_values`) on a series' sums."""
    n = len(s1) - 1
    while cuts:
        weakest = int(np.argmax(p_values))
        if p_values[weakest] < alpha:
            return cuts
        del cuts[weakest], p_values[weakest]
        edges = [0, *cuts, n]
        for k in (weakest - 1, weakest):
            if 0 <= k < len(cuts):
                p_values[k] = _welch_one(s1, s2, edges[k], edges[k + 1], edges[k + 2])
    return []


def _split_costs(logs: np.ndarray, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidate cuts between `first` and `last` (MIN_SEGMENT runs from either end) and the
    least-squares cost of the runs [first, last) as two segments split at each."""
    s1, s2 = _sums(logs[first:last])
    n = last - first
    k = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    cost = s2[n] - s1[k] ** 2 / k - (s1[n] - s1[k]) ** 2 / (n - k)
    return k + first, cost


def _admissible(
    logs: np.ndarray, first: int, last: int, moments: np.ndarray | None
) -> tuple[int, np.ndarray, np.ndarray]:
    """A boundary between `first` and `last`: its least-squares place, and the moments the system
    changed that the data cannot tell from it (their cost within LOCATION_LEVEL noise variances of
    the best) with their costs."""
    k, cost = _split_costs(logs, first, last)
    best = int(np.argmin(cost))
    if moments is None:
        return int(k[best]), k[:0], cost[:0]
    variance = max(float(cost[best]) / max(last - first - 2, 1), 1e-12)
    excess = (cost - cost[best]) / variance
    near = (excess <= LOCATION_LEVEL) & moments[k]
    return int(k[best]), k[near], excess[near]


def placed(
    logs: np.ndarray,
    cuts: Sequence[int],
    moments: np.ndarray | None,
) -> list[int]:
    """Each boundary moved to its least-squares place between its neighbours, or to a moment the
    system changed (`moments[i]`: between runs i-1 and i) that the data cannot tell from that
    place (a driver update two runs before the fitted step is the step's place, not a
    coincidence); among several such moments, the likeliest."""
    out: list[int] = []
    ends = [*cuts[1:], len(logs)]
    for cut, last in zip(cuts, ends, strict=True):
        first = out[-1] if out else 0
        if last - first < 2 * MIN_SEGMENT:
            out.append(cut)
            continue
        best, options, excess = _admissible(logs, first, last, moments)
        if len(options):
            best = int(options[np.argmin(excess)])
        out.append(best)
    return out


def found_of(
    series: Sequence[np.ndarray], alpha: float = ALPHA, penalty: float = PENALTY
) -> list[list[int]]:
    """The boundaries of each of `series` (positive figures in time order) the search finds
    (boundaries_of) and Welch's test keeps (significant_of), at their search places."""
    return significant_of(series, boundaries_of(series, penalty), alpha)


def settled_of(
    series: Sequence[np.ndarray],
    cuts: Sequence[Sequence[int]],
    moments: Sequence[np.ndarray | None],
    alpha: float = ALPHA,
) -> list[list[int]]:
    """The boundaries `cuts` (found_of) of each of `series` placed (`placed`, by the moments its
    system changed) and tested again (significant_of)."""
    moved = [
        sorted(set(placed(np.log(v), c, m))) if len(c) else []
        for v, c, m in zip(series, cuts, moments, strict=True)
    ]
    return significant_of(series, moved, alpha)


def with_moments_of(
    logs: Sequence[np.ndarray],
    cuts: Sequence[Sequence[int]],
    moments: Sequence[np.ndarray | None],
    alpha: float,
) -> list[list[int]]:
    """The boundaries of each series with the moments the system changed (`moments`; None: its
    boundaries as they are) that they do not explain and the figures say moved: a moment is a
    hypothesis named before looking, so it is tested without the search's penalty, by Welch
    between the boundaries around it, at `alpha` shared (Bonferroni) among the series' moments;
    the strongest first, then the rest again between the new boundaries, while one holds. Each
    round's tests of every series still adding a boundary at once."""
    out = [sorted(at) for at in cuts]
    # each series' level: alpha shared among its moments
    levels = {
        i: alpha / max(int(np.count_nonzero(m)), 1) for i, m in enumerate(moments) if m is not None
    }
    pending = list(levels)
    while pending:
        pending = _moments_round(logs, out, moments, pending, levels)
    return out


def _moments_round(
    logs: Sequence[np.ndarray],
    out: list[list[int]],
    moments: Sequence[np.ndarray | None],
    pending: list[int],
    levels: dict[int, float],
) -> list[int]:
    """A round of with_moments_of over the series `pending`: each one's moments with room tested,
    the strongest that holds (p below the series' level) added to its boundaries (`out`); the
    series that added one."""
    tests = [(i, _testable(len(logs[i]), out[i], moments[i])) for i in pending]
    tests = [(i, test) for i, test in tests if len(test[1])]
    p_values = _welch_of([logs[i] for i, _ in tests], [test for _, test in tests])
    moved = []
    for (i, (_, where, _)), p in zip(tests, p_values, strict=True):
        if p.min() < levels[i]:
            out[i] = sorted([*out[i], int(where[np.argmin(p)])])
            moved.append(i)
    return moved


def _testable(n: int, cuts: list[int], moments: np.ndarray | None) -> Tests:
    """The moments of a series of `n` runs with room for a test (MIN_SEGMENT runs from its
    boundaries `cuts` and its ends), each with the boundaries around it: Welch's tests."""
    edges = np.asarray([0, *cuts, n])
    where = np.flatnonzero(moments) if moments is not None else edges[:0]
    room = np.min(np.abs(where[:, None] - edges[None, :]), axis=1) >= MIN_SEGMENT
    where = where[room]
    side = np.searchsorted(edges, where)
    return edges[side - 1], where, edges[side]
