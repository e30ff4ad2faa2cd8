"""Which of a big history's figures a page draws, decided over numpy columns (no object per figure).

A history of a million figures cannot be drawn point by point in a page of a few megabytes. Each
history series (one configuration of one metric on one system, over time) keeps at most about
`points_per_series` points: its first and last, every point that regressed against the run before,
and in each of a series' equal slices of time its lowest and its highest
value. So every configuration is shown, with its range and its regressions; the points left out
are in the CSV written beside the page (docs/dashboard.md). A series short enough keeps every point.
The regressions are judged on the whole series, before thinning, by `bench compare`'s rule
(history.compare.decide on the ratio's 99 % interval; never with one sample on either side: the
page gives no threshold, and one sample is judged only against one).
"""

from __future__ import annotations

import numpy as np

from caramel.consumers.history.compare import DEFAULT_THRESHOLD, Call, decide
from caramel.stages.analyse.intervals import ratio_interval

POINTS_BUDGET = 30_000  # history points drawn in a whole page, past which its series are thinned
CHUNK = 100_000  # figures judged at a time
MIN_POINTS = 8  # a series is never thinned below this many points (first, last, lows and highs)


def regressed_pairs(
    mean: np.ndarray, sd: np.ndarray, n: np.ndarray, higher: np.ndarray
) -> np.ndarray:
    """For each figure after the first of a series (arrays in date order), whether it regressed
    against the one before, by pages.judging.judged's rule (history.compare.judge's without a
    threshold): the ratio's 99 % interval wholly beyond 2 % in the worse direction (`higher`: per
    pair, whether more is better), both sides with repeats. Returns len(mean) - 1 booleans."""
    mean, sd, n = mean.astype(float), sd.astype(float), n.astype(float)
    cur_mean, cur_n, base_mean, base_n = mean[1:], n[1:], mean[:-1], n[:-1]
    judged = (
        (cur_n > 1)
        & (base_n > 1)
        & np.isfinite(cur_mean)
        & np.isfinite(base_mean)
        & (cur_mean != base_mean)
        & (base_mean != 0)
    )
    # The interval holds the ratio (1 + change/|before|, as ratio_interval's): only a pair whose
    # ratio is itself beyond the band on the worse side can lie wholly beyond it. Those few are
    # judged: the rest need no t quantile at Welch's degrees of freedom, the costly part. (The
    # slack keeps a ratio a rounding away from the band's edge among them.)
    band = 1 + DEFAULT_THRESHOLD / 100
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = 1 + (cur_mean - base_mean) / np.abs(base_mean)
    worse = np.where(higher, ratio < (1 + 1e-9) / band, ratio > (1 - 1e-9) * band)
    pick = np.flatnonzero(judged & worse)
    interval = ratio_interval(
        cur_mean[pick], sd[1:][pick], cur_n[pick], base_mean[pick], sd[:-1][pick], base_n[pick]
    )
    calls = decide(interval.low, interval.high, DEFAULT_THRESHOLD, np.where(higher[pick], 1, -1))
    out = np.zeros(len(cur_mean), dtype=bool)
    out[pick] = calls == Call.REGRESSED
    return out


def series_regressions(
    ordered: np.ndarray,
    order: np.ndarray,
    mean: np.ndarray,
    sd: np.ndarray,
    n: np.ndarray,
    way: np.ndarray,
) -> np.ndarray:
    """Whether each figure regressed against the figure before it in its series, in the order
    `order` puts the figures in (by series, then date); `ordered` their series in that order. The
    figures' `mean`, `sd`, `n` and `way` (1 more is better, -1 less is better, 0 unknown; the
    series' first figure's direction counts for the whole series, as in pages.figures) are in the
    order recorded, taken in `order` a slice at a time: a dozen temporaries of a slice's size,
    never a sorted copy of a whole column."""
    out = np.zeros(len(order), dtype=bool)
    if len(order) < 2:
        return out
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    first_way = np.repeat(way[order[starts]], np.diff(np.r_[starts, len(ordered)])).astype(np.int8)
    for low in range(0, len(order) - 1, CHUNK):
        high = min(len(order), low + CHUNK + 1)
        rows = order[low:high]
        pairs = regressed_pairs(mean[rows], sd[rows], n[rows], first_way[low + 1 : high] > 0)
        same = (ordered[low + 1 : high] == ordered[low : high - 1]) & (
            first_way[low + 1 : high] != 0
        )
        out[low + 1 : high] = pairs & same
    return out


def thin(
    series: np.ndarray, mean: np.ndarray, regressed: np.ndarray, per_series: int
) -> np.ndarray:
    """The figures to draw (a boolean per figure) for arrays sorted by series, then date: every
    figure of a series of at most `per_series`; of a longer one its first and last, each
    regression and the lowest and highest of each of `per_series // 2` equal slices (of equal
    values, the earliest lowest and the latest highest). The slices follow each other in the
    sorted arrays, so their extremes are found by numpy's reduceat over them, without sorting the
    million figures."""
    count = len(series)
    keep = np.zeros(count, dtype=bool)
    if not count:
        return keep
    # positions and slice numbers as int32 (a million figures: each temporary 4 MB, not 8)
    starts = np.flatnonzero(np.r_[True, series[1:] != series[:-1]]).astype(np.int32)
    lengths = np.diff(np.r_[starts, count]).astype(np.int32)
    length = np.repeat(lengths, lengths)
    position = np.arange(count, dtype=np.int32) - np.repeat(starts, lengths)
    short = length <= per_series
    keep |= short | (position == 0) | (position == length - 1) | regressed
    slices = max(1, per_series // 2)
    piece = (
        np.repeat(np.arange(len(starts), dtype=np.int32), lengths) * slices
        + position.astype(np.int64) * slices // length
    ).astype(np.int32)
    del length, position, short
    piece_starts = np.flatnonzero(np.r_[True, piece[1:] != piece[:-1]])
    del piece
    piece_of = np.repeat(
        np.arange(len(piece_starts), dtype=np.int32), np.diff(np.r_[piece_starts, count])
    )
    lowest = np.flatnonzero(mean == np.minimum.reduceat(mean, piece_starts)[piece_of])
    # the first of a slice's lows
    keep[lowest[np.r_[True, piece_of[lowest][1:] != piece_of[lowest][:-1]]]] = True
    highest = np.flatnonzero(mean == np.maximum.reduceat(mean, piece_starts)[piece_of])
    # the last of its highs
    keep[highest[np.r_[piece_of[highest][1:] != piece_of[highest][:-1], True]]] = True
    return keep


def points_per_series(series_count: int) -> int:
    """How many points each series may keep so that the page draws about POINTS_BUDGET in all."""
    return max(MIN_POINTS, POINTS_BUDGET // max(1, series_count))
