"""Choosing a model per metric by leave-one-out cross-validation, never by hand.

Each measured configuration in turn is held out (all its repeats), every candidate is fitted on
the others and predicts it; the error is |predicted - measured mean| / measured mean. A model is
ranked by the mean of its median and 90th-percentile error (typical and bad cases both count); one
that cannot predict at least 80 % of the held-out configurations is not ranked. With fewer than
three configurations nothing can be validated: the analytic model is preferred (it needs only a
rate), then the plain power law.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from caramel.consumers.predict.analytic import Analytic
from caramel.consumers.predict.gp import GaussianProcess
from caramel.consumers.predict.overhead import AnalyticOverhead
from caramel.consumers.predict.points import MetricData, Point
from caramel.consumers.predict.powerlaw import PowerLaw

# the models bench predict fits (`candidates`)
Model = PowerLaw | GaussianProcess | Analytic | AnalyticOverhead

COVERAGE = 0.8
UNVALIDATED_ORDER = (
    "analytic",
    "analytic+overhead",
    "powerlaw",
    "powerlaw×products",
    "gaussian-process",
)


def is_time(data: MetricData) -> bool:
    return data.direction == "lower"


def candidates(data: MetricData) -> list[Model]:
    return [
        PowerLaw(False),
        PowerLaw(True),
        GaussianProcess(),
        Analytic(data.name, is_time(data)),
        AnalyticOverhead(data.name, is_time(data)),
    ]


@dataclass
class Validation:
    model: str
    errors: list[float] = field(default_factory=list)  # absolute % error per held-out configuration
    held_out: int = 0
    which: list[int] = field(default_factory=list)  # the held-out configuration of each error

    @property
    def median(self) -> float:
        return statistics.median(self.errors) if self.errors else math.nan

    @property
    def p90(self) -> float:
        return float(np.percentile(self.errors, 90)) if self.errors else math.nan

    @property
    def ranked(self) -> bool:
        return self.held_out >= 3 and len(self.errors) >= COVERAGE * self.held_out

    @property
    def score(self) -> float:
        return (self.median + self.p90) / 2 if self.ranked else math.inf


def leave_one_out(make: Callable[[], Model], points: list[Point]) -> Validation:
    validation = Validation(make().name, held_out=len(points))
    for i, held in enumerate(points):
        model = make()
        if not model.fit(points[:i] + points[i + 1 :]):
            continue
        found = model.predict([held])[0]
        measured = statistics.fmean(held.samples)
        if found is None or not math.isfinite(found[0]) or measured <= 0:
            continue
        validation.errors.append(100.0 * abs(math.exp(found[0]) - measured) / measured)
        validation.which.append(i)
    return validation


def tied(a: Validation, b: Validation) -> bool:
    """Leave-one-out cannot tell a from b: their errors on the same configurations do not differ
    (Wilcoxon's signed-rank test, scipy, two-sided 5 %)."""
    if not (a.ranked and b.ranked):
        return False
    mine, theirs = (
        dict(zip(a.which, a.errors, strict=True)),
        dict(zip(b.which, b.errors, strict=True)),
    )
    common = sorted(set(mine) & set(theirs))
    differences = [mine[i] - theirs[i] for i in common]
    if len(common) < 5 or not any(differences):
        return len(common) >= 5
    return bool(stats.wilcoxon(differences).pvalue >= 0.05)


@dataclass
class Choice:
    """The models of one metric, fitted on all its points, best first, and how they validated."""

    data: MetricData
    models: list[Model] = field(default_factory=list)
    validations: list[Validation] = field(default_factory=list)
    outward: list[Model] = field(
        default_factory=list
    )  # the order for targets outside the measured range

    @property
    def chosen(self) -> str:
        return self.models[0].name if self.models else "none"

    @property
    def validated(self) -> bool:
        return any(v.ranked and v.model == self.chosen for v in self.validations)


def choose(data: MetricData, validate: bool = True) -> Choice:
    """Fit every candidate on all points; validate those that fit (with at least 3
    configurations)."""
    points = list(filter(_positive, data.points))
    makers = {m.name: _maker(m) for m in candidates(data)}
    fitted = _fitted(makers, points)
    validations = _validations(fitted, makers, points) if validate else []
    order = _ranked(list(fitted), validations)
    outward = _outward(order, validations)
    return Choice(
        data, [fitted[name] for name in order], validations, [fitted[name] for name in outward]
    )


def _fitted(makers: dict[str, Callable[[], Model]], points: list[Point]) -> dict[str, Model]:
    """The candidates that fit all points, by name."""
    fitted = {}
    for name, make in makers.items():
        model = make()
        if model.fit(points):
            fitted[name] = model
    return fitted


def _positive(point: Point) -> bool:
    """Whether the point has samples, all above 0 (the models fit their logarithms)."""
    return bool(point.samples) and min(point.samples) > 0


def _validations(
    fitted: dict[str, Model], makers: dict[str, Callable[[], Model]], points: list[Point]
) -> list[Validation]:
    """Each fitted model's leave-one-out validation; none with fewer than 3 configurations."""
    if len(points) < 3:
        return []
    return [
        leave_one_out(_validation_maker(model, makers[name]), points)
        for name, model in fitted.items()
    ]


def _validation_maker(model: Model, make: Callable[[], Model]) -> Callable[[], Model]:
    """What leave-one-out fits: the model's own maker for validation where it has one (it may
    keep what it learned of all points), else fresh models like it."""
    return model.validation_maker() if hasattr(model, "validation_maker") else make


def _ranked(names: list[str], validations: list[Validation]) -> list[str]:
    """The models by validated score, ties and unvalidated ones in UNVALIDATED_ORDER."""
    scores = {v.model: v.score for v in validations}
    return sorted(
        names, key=lambda name: (scores.get(name, math.inf), UNVALIDATED_ORDER.index(name))
    )


def _outward(order: list[str], validations: list[Validation]) -> list[str]:
    """The order for targets outside the measured range. There a model whose form comes from the
    declared work goes first when leave-one-out cannot tell it from the best one: a data-driven
    model knows only the range."""
    by_name = {v.model: v for v in validations}
    best = by_name.get(order[0]) if order else None
    first = {n for n in order if n.startswith("analytic") and _as_good(best, by_name.get(n))}
    return sorted(order, key=lambda name: name not in first)  # stable: each part keeps its order


def _as_good(best: Validation | None, other: Validation | None) -> bool:
    """Whether `other` validated as well as `best`: it is best, or tied with it."""
    if best is None or other is None:
        return False
    return other.model == best.model or tied(best, other)


def _maker(model: Model) -> Callable[[], Model]:
    """A maker of fresh models like `model`: its class, unfitted, made with its arguments."""
    if isinstance(model, PowerLaw):
        return lambda: PowerLaw(model.products)
    if isinstance(model, AnalyticOverhead):
        return lambda: AnalyticOverhead(model.metric, model.is_time)
    if isinstance(model, Analytic):
        return lambda: Analytic(model.metric, model.is_time)
    return GaussianProcess
