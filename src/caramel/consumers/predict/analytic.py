"""The analytic model, where the benchmark file declares the work
(caramel.consumers.predict.declaration):

    time per unit   = work / (devices × rate)          (a metric that is a time)
    units per second = devices × rate / work           (a metric that is a throughput)

The sustained rate per device is learned from the history: log rate = a + b log devices + Σ c_i
log p_i over the declared parallelism parameters p_i (BayesianRidge,
caramel.consumers.predict.regression); what the history never varied is left out, so with one device
count the rate is a constant and time falls as 1/devices. The interval is the rate's.
"""

from __future__ import annotations

import math

import pandas as pd

from caramel.consumers.predict.declaration import Declaration, declaration
from caramel.consumers.predict.points import Point, Target
from caramel.consumers.predict.regression import LogLinear, Prediction


class Analytic:
    name = "analytic"

    def __init__(self, metric: str, is_time: bool) -> None:
        self.metric, self.is_time = metric, is_time
        self.inputs: list[str] = []
        self.regression: LogLinear | None = None
        self.ranges: dict[str, tuple[float, float]] = {}

    def _declared(self, target: Target) -> Declaration | None:
        found = declaration(target.params)
        return found if found is not None and found.metric == self.metric else None

    def _frame(self, decls: list[Declaration]) -> pd.DataFrame:
        data = {"devices": [math.log(d.devices) for d in decls]}
        for name in self.inputs:
            if name != "devices":
                data[name] = [math.log(d.parallel.get(name, 1.0)) for d in decls]
        return pd.DataFrame(data, index=range(len(decls)))[self.inputs]

    def fit(self, points: list[Point]) -> bool:
        decls, ys = self._observations(points)
        if not ys:
            return False
        self._learn_ranges(decls)
        names, full = _log_parameters(decls)
        self.inputs = [n for n in names if full[n].nunique() > 1]
        self.regression = LogLinear(self.inputs, []).fit(
            full[self.inputs], pd.Series(ys).to_numpy()
        )
        return True

    def _observations(self, points: list[Point]) -> tuple[list[Declaration], list[float]]:
        """Each positive sample of a point declaring this metric's work: its declaration and the
        log of the rate per device it shows."""
        decls: list[Declaration] = []
        ys: list[float] = []
        for point in points:
            decl = self._declared(point)
            if decl is None:
                continue
            samples = [sample for sample in point.samples if sample > 0]
            decls += [decl] * len(samples)
            ys += [self._log_rate(decl, sample) for sample in samples]
        return decls, ys

    def _log_rate(self, decl: Declaration, sample: float) -> float:
        """The log rate per device a sample shows: work over devices and time, or a throughput's
        units times the work per unit over devices."""
        if self.is_time:
            return math.log(decl.work) - math.log(decl.devices) - math.log(sample)
        return math.log(sample) + math.log(decl.work) - math.log(decl.devices)

    def _learn_ranges(self, decls: list[Declaration]) -> None:
        """The range of work, devices and each parallelism parameter the history measured."""
        self.ranges.update({name: (min(v), max(v)) for name, v in _measured(decls).items()})

    def predict(self, targets: list[Target]) -> list[Prediction]:
        out: list[Prediction] = [None] * len(targets)
        usable = [(i, d) for i, t in enumerate(targets) if (d := self._declared(t)) is not None]
        if not usable or self.regression is None:
            return out
        found = self.regression.predict(self._frame([d for _, d in usable]))
        for (i, decl), (log_rate, half) in zip(usable, found, strict=True):
            per = math.log(decl.work) - math.log(decl.devices)
            out[i] = (per - log_rate if self.is_time else log_rate - per, half)
        return out

    def outside(self, target: Target) -> list[str]:
        """Work, devices or parallelism outside what the history measured."""
        decl = self._declared(target)
        if decl is None:
            return []
        values = {"work": decl.work, "devices": decl.devices, **decl.parallel}
        return [
            n
            for n, v in values.items()
            if n in self.ranges
            and not self.ranges[n][0] * (1 - 1e-9) <= v <= self.ranges[n][1] * (1 + 1e-9)
        ]


def _measured(decls: list[Declaration]) -> dict[str, list[float]]:
    """The values work, devices and each parallelism parameter took (1 where not declared)."""
    parallel = {n for d in decls for n in d.parallel}
    return {
        "work": [d.work for d in decls],
        "devices": [d.devices for d in decls],
        **{name: [d.parallel.get(name, 1.0) for d in decls] for name in parallel},
    }


def _log_parameters(decls: list[Declaration]) -> tuple[list[str], pd.DataFrame]:
    """The log of devices and of each parallelism parameter (1 where a declaration lacks it), one
    row per declaration, and the columns' names: devices first."""
    names = ["devices"] + sorted({n for d in decls for n in d.parallel})
    full = pd.DataFrame(
        {
            "devices": [math.log(d.devices) for d in decls],
            **{n: [math.log(d.parallel.get(n, 1.0)) for d in decls] for n in names[1:]},
        }
    )
    return names, full
