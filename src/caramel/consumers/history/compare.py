"""Baseline against current, per metric: a verdict from the interval of the ratio current/baseline.

The rule (docs/history.md, stated there once): the ratio of the means current/baseline gets its
99 % interval (stages.analyse.intervals.ratio_interval: the delta method on log(ratio), Welch's
degrees of freedom, scipy's t), and a threshold (default 2 %) makes a band of no change, from
1/(1 + threshold) to 1 + threshold (symmetric in log: a time and its reciprocal rate, whose ratios
are each other's reciprocals, always get the same verdict). The whole interval beyond the band on
the bad side is "regressed", on the good side "improved"; the whole interval inside the band is
"within noise"; anything else "cannot judge", with the repetitions per side that would decide at
the measured spread. A side of one sample has no spread, hence no interval: the ratio itself is
judged against the band only when a threshold is given (`--threshold`, a target's tolerance), else
"cannot judge". A change beyond the band of a figure whose direction is unknown is "cannot judge",
never a guess.
The baseline's (or a target's) figure is first converted into the current figure's unit
(spec.quantities: `0.013 s` meets `12.0 ms` as `13 ms`); units of different dimensions are an error
naming both sides and both units, never a verdict.

Equal means are never a change ("within noise", whatever the direction or a zero). A baseline of 0
has no ratio (diff_pct is NaN): "cannot judge", and `why` says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any, Generic, Protocol, TypeVar

from caramel.consumers.history.metrics import Metric
from caramel.errors import RunError
from caramel.stages.analyse.intervals import LEVEL, RATIO_METHOD, ratio_interval
from caramel.stages.spec.quantities import UnitMismatch, conversion, describe
from caramel.vocabulary import Direction, VerdictWord

CANNOT_JUDGE = VerdictWord.CANNOT_JUDGE
UNKNOWN_DIRECTION = (
    "direction unknown; declare direction: lower|higher on the pattern "
    "(or a unit such as s or items/s)"
)
DEFAULT_THRESHOLD = 2.0  # percent: the band of no change, where no threshold is given
TARGET_THRESHOLD = 5.0  # percent: a target's tolerance where neither it nor --threshold gives one
# past this, "repetitions needed" says none would do (a ratio on the band's very edge)
MOST_REPETITIONS = 1_000_000
TRIED_AT_ONCE = 256  # repetition counts judged in one numpy call (repetitions_needed)


class Call(IntEnum):
    """What the interval of a ratio says against the band of no change (`decide`)."""

    WITHIN_NOISE = 0
    IMPROVED = 1
    REGRESSED = 2
    UNDECIDED = 3  # the interval reaches both inside and outside the band (or there is none)
    CHANGED = 4  # the whole interval beyond the band, and the direction unknown


def decide(low: Any, high: Any, threshold: float, way: Any) -> Any:
    """The Call (as ints, for numbers or numpy arrays) of ratio intervals [low, high] against
    the band [1/(1 + threshold %), 1 + threshold %]; `way` +1 where more is better, -1 where less
    is, 0 unknown. NaN bounds (no interval) are UNDECIDED. Used by `judge` and by the pages
    (pages.thinning)."""
    import numpy as np

    band = 1 + threshold / 100
    low, high, way = np.asarray(low, dtype=float), np.asarray(high, dtype=float), np.asarray(way)
    above, below = low > band, high < 1 / band
    inside = (low >= 1 / band) & (high <= band)
    worse = (above & (way < 0)) | (below & (way > 0))
    better = (above & (way > 0)) | (below & (way < 0))
    calls = [Call.WITHIN_NOISE, Call.REGRESSED, Call.IMPROVED, Call.CHANGED]
    return np.select([inside, worse, better, above | below], calls, Call.UNDECIDED)


class Measured(Protocol):
    """What a verdict reads of a figure: a history `Metric`, or a page's `Figure` (pages)."""

    @property
    def mean(self) -> float: ...
    @property
    def sd(self) -> float: ...
    @property
    def n(self) -> int: ...
    @property
    def direction(self) -> str: ...


M = TypeVar("M", bound=Measured)


@dataclass
class Verdict(Generic[M]):
    metric: M  # current
    baseline_mean: float
    baseline_sd: float
    baseline_n: int
    diff_pct: float
    verdict: VerdictWord
    why: str = ""
    ratio: float = math.nan  # current/baseline (1 + diff/|baseline| where a mean is not positive)
    ratio_low: float = math.nan  # its interval (NaN: a side of one sample, no spread)
    ratio_high: float = math.nan
    level: float = LEVEL
    method: str = RATIO_METHOD
    threshold: float = DEFAULT_THRESHOLD  # percent: the band of no change it was judged against
    needed: int | None = None  # undecided: repetitions per side that would decide at this spread


_WORDS = {
    Call.WITHIN_NOISE: VerdictWord.WITHIN_NOISE,
    Call.IMPROVED: VerdictWord.IMPROVED,
    Call.REGRESSED: VerdictWord.REGRESSED,
    Call.UNDECIDED: CANNOT_JUDGE,
    Call.CHANGED: CANNOT_JUDGE,
}


def way_of(direction: object) -> int:
    """+1 where more is better, -1 where less is, 0 where the direction is unknown."""
    return 1 if direction == Direction.HIGHER else -1 if direction == Direction.LOWER else 0


def judge(
    current: M,
    base_mean: float,
    base_sd: float,
    base_n: int,
    threshold: float | None,
    target: bool = False,
    advise: bool = True,
) -> Verdict[M]:
    """The verdict on `current` against a baseline's mean, sd and n (`target`: a target value,
    exact, judged against `threshold` or TARGET_THRESHOLD). `advise`: an undecided verdict says
    how many repetitions would decide (`needed`, in `why`): a search of a few ratio intervals,
    which a page judging thousands of figures and showing none of it goes without."""
    out: Verdict[M] = Verdict(
        current, base_mean, base_sd, base_n, math.nan, VerdictWord.NO_BASELINE
    )
    if _judged_without_ratio(out):
        return out
    base = (base_mean, 0.0, math.inf) if target else (base_mean, base_sd, base_n)
    ratio = ratio_interval(current.mean, current.sd, current.n, *base)
    _judge_with(out, (ratio.ratio, ratio.low, ratio.high), threshold, target, advise)
    return out


def judge_pairs(
    pairs: Sequence[tuple[M, float, float, int]], advise: bool = False
) -> list[Verdict[M]]:
    """judge() of each (current, baseline mean, sd, n) against the default band, the ratio
    intervals of all pairs and their calls worked out in one call each (a page judges thousands of
    figures; `decide` on one pair costs more than the interval of a thousand)."""
    import numpy as np

    columns = np.array(
        [(c.mean, c.sd, c.n, mean, sd, n) for c, mean, sd, n in pairs], dtype=float
    ).reshape(-1, 6)
    ratios = ratio_interval(*columns.T)
    ways = [way_of(current.direction) for current, *_ in pairs]
    calls = decide(ratios.low, ratios.high, DEFAULT_THRESHOLD, np.array(ways, dtype=int))
    out = []
    for k, (current, base_mean, base_sd, base_n) in enumerate(pairs):
        verdict: Verdict[M] = Verdict(
            current, base_mean, base_sd, base_n, math.nan, VerdictWord.NO_BASELINE
        )
        if not _judged_without_ratio(verdict):
            ratio = (float(ratios.ratio[k]), float(ratios.low[k]), float(ratios.high[k]))
            _judge_with(verdict, ratio, None, False, advise, Call(int(calls[k])))
        out.append(verdict)
    return out


def _judge_with(
    out: Verdict[M],
    ratio: tuple[float, float, float],
    threshold: float | None,
    target: bool,
    advise: bool,
    call: Call | None = None,
) -> None:
    """The verdict of `out` by its ratio and interval (`ratio`: ratio, low, high); `call`: the
    interval's, decided already (judge_pairs)."""
    default = TARGET_THRESHOLD if target else DEFAULT_THRESHOLD
    out.threshold = default if threshold is None else threshold
    out.ratio, out.ratio_low, out.ratio_high = ratio
    _judge_ratio(out, target, threshold is not None or target, advise, call)


def _judged_without_ratio(out: Verdict[M]) -> bool:
    """Whether the verdict is told without a ratio (and tell it): no baseline (none, or a mean that
    is no finite number: `out` as made), the same value on both sides, a baseline of 0."""
    mean, base_mean = out.metric.mean, out.baseline_mean
    if not out.baseline_n or not math.isfinite(base_mean) or not math.isfinite(mean):
        return True
    out.diff_pct = 100.0 * (mean - base_mean) / abs(base_mean) if base_mean else math.nan
    if mean == base_mean:
        out.diff_pct, out.verdict = 0.0, VerdictWord.WITHIN_NOISE
        out.why = "the same value on both sides"
        return True
    if not base_mean:
        out.verdict = CANNOT_JUDGE
        out.why = f"the baseline is 0 (now {mean:g}): no ratio to judge a change by"
        return True
    return False


def _judge_ratio(
    out: Verdict[M], target: bool, explicit: bool, advise: bool, call: Call | None = None
) -> None:
    """The verdict of the ratio's interval against the band of no change; where a side has one
    sample (no spread, no interval), of the ratio itself, and only against an `explicit` threshold
    (--threshold, or a target's)."""
    one_sample = math.isnan(out.ratio_low)
    if one_sample and not explicit:
        out.verdict = CANNOT_JUDGE
        out.why = _one_sample_why(out, target) + "; judged only against an explicit --threshold"
        if advise:
            out.needed = _needed(out, target)
        return
    if one_sample:
        why, low, high = _one_sample_why(out, target), out.ratio, out.ratio
    else:
        why = ("against a target: " if target else "") + _change(out)
        low, high = out.ratio_low, out.ratio_high
    if call is None or one_sample:
        call = Call(int(decide(low, high, out.threshold, way_of(out.metric.direction))))
    _called(out, call, why, target, advise)


def _one_sample_why(out: Verdict[M], target: bool) -> str:
    """Why a verdict of a side of one sample is what it is: which side has one, and the ratio."""
    if target:
        return "against a target: " + _change(out)
    if out.metric.n < 2 and out.baseline_n > 1:
        side = "the run"
    else:
        side = "the baseline" if out.metric.n > 1 else "both sides"
    return f"single sample ({side}): no spread, " + _change(out)


def _called(out: Verdict[M], call: Call, why: str, target: bool, advise: bool) -> None:
    """The verdict of a call, with why: a change of no known direction says so, an undecided one
    how many repetitions would decide (`advise`)."""
    out.verdict, out.why = _WORDS[call], why
    if call is Call.CHANGED:
        out.why = f"{UNKNOWN_DIRECTION}; {why}"
    elif call is Call.UNDECIDED and advise:
        out.needed = _needed(out, target)
        out.why = why + "; " + _needed_text(out.needed)


def _needed(out: Verdict[M], target: bool) -> int | None:
    """repetitions_needed for the verdict's figure against its baseline (or target)."""
    return repetitions_needed(out.metric, out.baseline_mean, out.baseline_sd, out.threshold, target)


def _change(v: Verdict[M]) -> str:
    """`ratio 1.056 [1.031, 1.082] (99 %) vs ±2 %`: the ratio, its interval where there is one."""
    shown = f"ratio {v.ratio:.4g}"
    if not math.isnan(v.ratio_low):
        shown += f" [{v.ratio_low:.4g}, {v.ratio_high:.4g}] ({100 * v.level:g} %)"
    return f"{shown}, change {v.diff_pct:+.1f}% vs ±{v.threshold:g}%"


def _needed_text(needed: int | None) -> str:
    if needed is None:
        return "no number of repetitions would decide at this spread"
    return f"about {needed} repetitions per side would decide"


def repetitions_needed(
    current: Measured, base_mean: float, base_sd: float, threshold: float, target: bool = False
) -> int | None:
    """The fewest repetitions per side (of the current run alone against a target) after which the
    interval of the ratio, at the measured means and spread, decides against the band; None where
    there is no spread to go by or even MOST_REPETITIONS would not (a ratio on the band's edge).
    A side of one sample is taken to spread as the other (its relative sd)."""
    spreads = _spreads_to_go_by(current, base_mean, base_sd, target)
    if spreads is None:
        return None
    cur_sd, base_sd = spreads
    import numpy as np

    way = way_of(current.direction)

    def decides(n: Any) -> Any:
        """Whether `n` repetitions per side decide (for one n, or an array of them at once)."""
        mean = np.full(np.shape(n), current.mean)
        r = ratio_interval(mean, cur_sd, n, base_mean, base_sd, math.inf if target else n)
        return decide(r.low, r.high, threshold, way) != Call.UNDECIDED

    return _fewest_deciding(decides)


def _spreads_to_go_by(
    current: Measured, base_mean: float, base_sd: float, target: bool
) -> tuple[float, float] | None:
    """The sds of the run and of the baseline to go by: each side's own, a side of one sample
    taken to spread as the other (its relative sd), a target none; None where neither side has a
    spread."""
    cur_cv = _relative_sd(current.sd, current.mean) if current.n > 1 else math.nan
    known = not target and math.isfinite(base_sd)
    base_cv = _relative_sd(base_sd, base_mean) if known else math.nan
    if math.isnan(cur_cv) and math.isnan(base_cv):
        return None
    cur_sd = abs(current.mean) * _first_number(cur_cv, base_cv)
    return cur_sd, 0.0 if target else abs(base_mean) * _first_number(base_cv, cur_cv)


def _relative_sd(sd: float, mean: float) -> float:
    """sd / |mean|; NaN for a mean of 0."""
    return sd / abs(mean) if mean else math.nan


def _first_number(value: float, instead: float) -> float:
    """`value`, or `instead` where it is NaN."""
    return instead if math.isnan(value) else value


def _fewest_deciding(decides: Callable[[Any], Any]) -> int | None:
    """The fewest repetitions (at least 2) that `decides`: the first power of two that does, up to
    MOST_REPETITIONS' first above it, all at once; then below it TRIED_AT_ONCE evenly spaced
    counts at a time. None where none does."""
    import numpy as np

    powers = 2 ** np.arange(1, math.ceil(math.log2(MOST_REPETITIONS)) + 1)
    deciding = np.flatnonzero(decides(powers))
    if not len(deciding):
        return None
    high = int(powers[deciding[0]])
    low = high // 2  # undecided at `low` (or low < 2): the answer is in (low, high]
    while high - low > 1:
        low, high = _narrowed(decides, low, high)
    return max(high, 2)


def _narrowed(decides: Callable[[Any], Any], low: int, high: int) -> tuple[int, int]:
    """(low, high] narrowed by up to TRIED_AT_ONCE evenly spaced counts below `high`: the interval
    only narrows as n grows, so below the first that decides, none does."""
    import numpy as np

    step = -(-(high - low) // TRIED_AT_ONCE)
    tried = np.arange(low + step, high, step)
    deciding = np.flatnonzero(decides(tried))
    if not len(deciding):
        return int(tried[-1]), high
    first = int(deciding[0])
    return (int(tried[first - 1]) if first else low), int(tried[first])


def in_unit(figure: Metric, unit: str) -> Metric:
    """`figure` (a baseline's) with its samples in `unit`, by spec.quantities.conversion
    (UnitMismatch across dimensions); the figure itself when nothing changes."""
    factor = conversion(figure.unit, unit)
    if factor == 1.0:
        return figure
    return replace(figure, unit=unit, samples=[sample * factor for sample in figure.samples])


def unit_mismatch(name: str, have: str, theirs: str, want: str, mine: str) -> RunError:
    """The error of a figure `name` printed in `have` by `theirs` (the baseline, a target) and in
    `want` by `mine` (the run): both named with their units and dimensions."""
    return RunError(
        f"figure '{name}': {mine} has it in '{want}' ({describe(want)}), {theirs} "
        f"in '{have}' ({describe(have)}); figures of different dimensions are never "
        "compared",
        hint="compare a figure with the same quantity (a time with a time, "
        "tokens/s with tok/s); docs/history.md, 'Converting units', says which convert",
    )


def compare_runs(
    current: list[Metric],
    baseline: list[Metric],
    threshold: float | None,
    sides: tuple[str, str] = ("the run", "the baseline"),
) -> list[Verdict[Metric]]:
    """Each figure of `current` against the baseline's of the same table, configuration and name,
    the baseline's converted into the current figure's unit first; `sides` names the run and the
    baseline in the error when a figure's units cannot meet."""
    base = {(m.table, m.key, m.name): m for m in baseline}
    return [
        _against_baseline(m, base.get((m.table, m.key, m.name)), threshold, sides) for m in current
    ]


def _against_baseline(
    metric: Metric, baseline: Metric | None, threshold: float | None, sides: tuple[str, str]
) -> Verdict[Metric]:
    """One figure against the baseline's (None: the baseline has none), converted into the
    figure's unit first."""
    if baseline is None:
        return judge(metric, math.nan, math.nan, 0, threshold)
    try:
        converted = in_unit(baseline, metric.unit)
    except UnitMismatch:
        raise unit_mismatch(metric.name, baseline.unit, sides[1], metric.unit, sides[0]) from None
    verdict = judge(metric, converted.mean, converted.sd, converted.n, threshold)
    if converted.unit != baseline.unit:
        verdict.why = f"baseline converted from {baseline.unit} to {metric.unit}; " + verdict.why
    return verdict


def compare_targets(
    current: list[Metric],
    targets: Mapping[str, object],
    threshold: float | None,
    source: str = "the targets",
) -> list[Verdict[Metric]]:
    """Targets from a file (`{"Tokens/second": 1200, "Time/iteration(s)": {"value": 0.9}}`), as the
    Mila training benchmarks' baselines.json: every row of a metric against its target value, a
    target with a `unit` (`{"value": 900, "unit": "ms"}`) converted into the figure's unit first."""
    out = []
    for metric in current:
        target = targets.get(f"{metric.table}/{metric.name}", targets.get(metric.name))
        if target is None:
            continue
        value, limit, unit = _target_parts(target, threshold, metric.name)
        try:
            value *= conversion(unit, metric.unit)
        except UnitMismatch:
            raise unit_mismatch(metric.name, unit, source, metric.unit, "the run") from None
        limit = None if limit is None else _number(limit, metric.name)
        out.append(judge(metric, value, math.nan, 1, limit, target=True))
    return out


def _target_parts(target: object, threshold: float | None, name: str) -> tuple[float, object, str]:
    """A target's value, threshold (`threshold` where it gives none) and unit: a number alone, or
    `{"value": .., "threshold": .., "unit": ..}`."""
    if not isinstance(target, dict):
        return _number(target, name), threshold, ""
    unit = str(target.get("unit") or "")
    return _number(target.get("value"), name), target.get("threshold", threshold), unit


def _number(value: object, name: str) -> float:
    """A target's value or threshold as a number; ValueError naming the figure for anything else."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"the target of {name!r} is {value!r}, not a number")
