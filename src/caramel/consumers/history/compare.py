"""Baseline against current, per metric: a verdict from the spread of both sides.

The rule (docs/history.md): with repeats on both sides, Welch's t statistic
|mean_c - mean_b| / sqrt(sd_c²/n_c + sd_b²/n_b) must exceed the two-sided 99 % quantile of
Student's t for Welch's degrees of freedom, and the change must be at least `threshold` % (default
2 %): a difference the noise explains, or too small to matter, is "within noise". With a single
sample on a side there is no spread to judge by ("cannot judge spread": its sd is unknown, not 0),
so the change must exceed the threshold alone (default 5 % then). The metric's stored direction
decides improved or regressed; a change of a figure whose direction is unknown is "cannot judge",
never a guess. The baseline's (or a target's) figure is first converted into the current figure's
unit (spec.quantities: `0.013 s` meets `12.0 ms` as `13 ms`); units of different dimensions are an
error naming both sides and both units, never a verdict.

Equal means are never a change ("within noise", whatever the direction or a zero). A baseline
of 0 has no percentage change (diff_pct is NaN): with repeats on both sides the t test alone
decides, with a single sample any change from 0 counts, and `why` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from caramel.consumers.history.metrics import Metric
from caramel.errors import RunError
from caramel.stages.spec.quantities import UnitMismatch, conversion, describe
from caramel.vocabulary import Direction, VerdictWord

CANNOT_JUDGE = VerdictWord.CANNOT_JUDGE
UNKNOWN_DIRECTION = "direction unknown; declare direction: lower|higher on the pattern (or a unit such as s or items/s)"

# two-sided 99 % quantiles of Student's t by degrees of freedom (1..30), then the normal's
_T99 = [63.66, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012, 2.977,
        2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763,
        2.756, 2.750]


def t99(df: float) -> float:
    if df < 1:
        return _T99[0]
    return _T99[min(int(df), 30) - 1] if df <= 30 else 2.576


class Measured(Protocol):
    """What a verdict reads of a figure: a history `Metric`, or a page's `Figure` (pages/sources.py)."""

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


def judge(current: M, base_mean: float, base_sd: float, base_n: int, threshold: float | None,
          target: bool = False) -> Verdict[M]:
    """The verdict on `current` against a baseline's mean, sd and n (`target`: a target value, no sample)."""
    mean = current.mean
    if not base_n or not math.isfinite(base_mean) or not math.isfinite(mean):
        return Verdict(current, base_mean, base_sd, base_n, math.nan, VerdictWord.NO_BASELINE)
    if mean == base_mean:
        return Verdict(current, base_mean, base_sd, base_n, 0.0, VerdictWord.WITHIN_NOISE, "the same value on both sides")
    diff_pct = 100.0 * (mean - base_mean) / abs(base_mean) if base_mean else math.nan
    if current.n > 1 and base_n > 1 and not target:
        limit = 2.0 if threshold is None else threshold
        significant, why = _t_test(current, base_mean, base_sd, base_n, diff_pct, limit)
    else:
        limit = 5.0 if threshold is None else threshold
        if target:
            why = "against a target: " + _change(diff_pct, limit, mean)
        else:
            side = "the run" if current.n < 2 and base_n > 1 else "the baseline" if current.n > 1 else "both sides"
            why = f"single sample ({side}): cannot judge spread; " + _change(diff_pct, limit, mean)
        significant = True
    if not significant or (base_mean and abs(diff_pct) < limit):
        return Verdict(current, base_mean, base_sd, base_n, diff_pct, VerdictWord.WITHIN_NOISE, why)
    if current.direction not in (Direction.HIGHER, Direction.LOWER):
        return Verdict(current, base_mean, base_sd, base_n, diff_pct, CANNOT_JUDGE, f"{UNKNOWN_DIRECTION}; {why}")
    better = (mean > base_mean) == (current.direction == Direction.HIGHER)
    return Verdict(current, base_mean, base_sd, base_n, diff_pct,
                   VerdictWord.IMPROVED if better else VerdictWord.REGRESSED, why)


def _t_test(current: Measured, base_mean: float, base_sd: float, base_n: int, diff_pct: float,
            limit: float) -> tuple[bool, str]:
    """Welch's t test at 99 %: whether the difference exceeds the noise, and why."""
    mean = current.mean
    va, vb = current.sd ** 2 / current.n, base_sd ** 2 / base_n
    se = math.sqrt(va + vb)
    if not se > 0:
        return mean != base_mean, "no spread on either side"
    t = abs(mean - base_mean) / se
    df = (va + vb) ** 2 / ((va ** 2 / (current.n - 1) if va else 0) + (vb ** 2 / (base_n - 1) if vb else 0)
                           or 1e-300)
    return t > t99(df), f"t={t:.2f} vs {t99(df):.2f} (df {df:.1f}), " + _change(diff_pct, limit, mean)


def _change(diff_pct: float, limit: float, mean: float) -> str:
    if math.isnan(diff_pct):
        return f"the baseline is 0 (now {mean:g}): no % change, any change counts"
    return f"change {diff_pct:+.1f}% vs {limit:g}%"


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
    return RunError(f"figure '{name}': {mine} has it in '{want}' ({describe(want)}), {theirs} "
                    f"in '{have}' ({describe(have)}); figures of different dimensions are never "
                    "compared", hint="compare a figure with the same quantity (a time with a time, "
                    "tokens/s with tok/s); docs/history.md, 'Converting units', says which convert")


def compare_runs(current: list[Metric], baseline: list[Metric], threshold: float | None,
                 sides: tuple[str, str] = ("the run", "the baseline")) -> list[Verdict]:
    """Each figure of `current` against the baseline's of the same table, configuration and name,
    the baseline's converted into the current figure's unit first; `sides` names the run and the
    baseline in the error when a figure's units cannot meet."""
    base = {(m.table, m.key, m.name): m for m in baseline}
    out = []
    for metric in current:
        b = base.get((metric.table, metric.key, metric.name))
        printed = b.unit if b is not None else ""
        if b is not None:
            try:
                b = in_unit(b, metric.unit)
            except UnitMismatch:
                raise unit_mismatch(metric.name, printed, sides[1], metric.unit, sides[0]) from None
        verdict = judge(metric, b.mean if b else math.nan, b.sd if b else math.nan, b.n if b else 0,
                        threshold)
        if b is not None and b.unit != printed:
            verdict.why = f"baseline converted from {printed} to {metric.unit}; " + verdict.why
        out.append(verdict)
    return out


def compare_targets(current: list[Metric], targets: dict, threshold: float | None,
                    source: str = "the targets") -> list[Verdict]:
    """Targets from a file (`{"Tokens/second": 1200, "Time/iteration(s)": {"value": 0.9}}`), as the
    Mila training benchmarks' baselines.json: every row of a metric against its target value, a
    target with a `unit` (`{"value": 900, "unit": "ms"}`) converted into the figure's unit first."""
    out = []
    for metric in current:
        target = targets.get(f"{metric.table}/{metric.name}", targets.get(metric.name))
        if target is None:
            continue
        value = _number(target.get("value") if isinstance(target, dict) else target, metric.name)
        limit = target.get("threshold", threshold) if isinstance(target, dict) else threshold
        unit = str(target.get("unit") or "") if isinstance(target, dict) else ""
        try:
            value *= conversion(unit, metric.unit)
        except UnitMismatch:
            raise unit_mismatch(metric.name, unit, source, metric.unit, "the run") from None
        limit = 5.0 if limit is None else _number(limit, metric.name)
        out.append(judge(metric, value, math.nan, 1, limit, target=True))
    return out


def _number(value: object, name: str) -> float:
    """A target's value or threshold as a number; ValueError naming the figure for anything else."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"the target of {name!r} is {value!r}, not a number")
