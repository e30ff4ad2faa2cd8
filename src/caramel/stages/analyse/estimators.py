"""A figure's mean, sd and sem under the estimator its step declares (spec/estimator.py), with
numpy.

    summary = summarise([207.1, 199.4, 231.0], Estimator())   # mean, sd (ddof=1), sem, sd%, sem%

One sample (or none left after trimming) has no spread: sd, sem, sd% and sem% are NaN, which tables
show as '-' ("cannot judge spread"), never 0.

N copies' samples are pooled as milabench's summary pools its GPUs' (milabench/summary.py `_merge`,
`_metrics`; report `_make_row`): `pool([[...], [...]], estimator)` gives the estimate over every
sample of every copy (milabench's `perf`), the sum of each copy's own estimate (its `score`), and
the pooled samples' n, sd and sem (its `std%` and `sem%` over `perf`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from caramel.stages.spec.estimator import DEFAULT, TRIM_FROM, Estimator, Samples, parse_estimator

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Summary:
    n: int  # samples given
    used: int  # samples the mean and sd were taken over (trimmed: n - 2 from 5 samples on)
    mean: float
    sd: float  # NaN: fewer than two samples, no spread to judge
    sem: float

    @property
    def sd_pct(self) -> float:
        return _pct(self.sd, self.mean)

    @property
    def sem_pct(self) -> float:
        return _pct(self.sem, self.mean)

    @property
    def has_spread(self) -> bool:
        return not math.isnan(self.sd)


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / abs(whole) if whole and not math.isnan(part) else math.nan


def estimator_of(text: str) -> Estimator:
    """The estimator a stored step declares (its text was checked when the file was read)."""
    return parse_estimator(text) if text.strip() else DEFAULT


def summarise(values: Iterable[float], estimator: Estimator = DEFAULT) -> Summary:
    import numpy as np  # here: importing numpy costs every `bench` command 0.15 s

    samples = np.sort(np.asarray(list(values), dtype=float))
    n = int(samples.size)
    if estimator.samples is Samples.TRIMMED and n >= TRIM_FROM:
        samples = samples[1:-1]
    used = int(samples.size)
    if used == 0:
        return Summary(n, 0, math.nan, math.nan, math.nan)
    mean, sd = mean_sd(samples, estimator.ddof)
    if used < 2 or used <= estimator.ddof:
        return Summary(n, used, mean, math.nan, math.nan)
    return Summary(n, used, mean, sd, sd / math.sqrt(used))


def mean_sd(samples: np.ndarray, ddof: int = 1) -> tuple[float, float]:
    """numpy's mean and standard deviation (NaN sd with no more samples than `ddof`). Where either
    is beyond a double though every sample is finite (repeats of 1.7e308, whose sum overflows), they
    are taken of the samples divided by the largest magnitude, then multiplied back: finite samples
    have a finite mean, and no overflow warning reaches the terminal."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        mean, sd = _plain_mean_sd(samples, ddof)
        if samples.size and _overflowed(mean, sd, samples.size <= ddof, samples):
            scale = float(np.abs(samples).max())
            mean, sd = _plain_mean_sd(samples / scale, ddof)
            mean, sd = mean * scale, sd * scale
    return mean, sd


def _plain_mean_sd(samples: np.ndarray, ddof: int) -> tuple[float, float]:
    mean = float(samples.mean()) if samples.size else math.nan
    sd = float(samples.std(ddof=ddof)) if samples.size > ddof else math.nan
    return mean, sd


def _overflowed(mean: float, sd: float, no_sd: bool, samples: np.ndarray) -> bool:
    """Whether the mean or sd is not finite though every sample is."""
    import numpy as np

    finite = math.isfinite(mean) and (math.isfinite(sd) or no_sd)
    return not finite and bool(np.isfinite(samples).all())


@dataclass(frozen=True)
class Pooled:
    """The figures of N copies' samples taken together, as milabench's report makes them."""

    perf: float  # the estimate over every sample of every copy
    score: float  # the sum of each copy's own estimate (the node's throughput)
    spread: Summary  # of the pooled samples: n, sd, sem, and sd%, sem% of `perf`
    copies: int

    def value(self, aggregate: str) -> float:
        """The result a step's `copies_aggregate` names: `sum` the score, `mean` the pooled
        estimate."""
        return self.score if aggregate == "sum" else self.perf


def pool(copies: Sequence[Iterable[float]], estimator: Estimator = DEFAULT) -> Pooled:
    """`copies`: each copy's samples. milabench trims the pooled samples (from 5 on, its smallest
    and largest sample, whichever copy gave them), never whole copies."""
    lists = [list(samples) for samples in copies]
    spread = summarise([x for samples in lists for x in samples], estimator)
    score = sum(summarise(samples, estimator).mean for samples in lists)
    return Pooled(spread.mean, score, spread, len(lists))
