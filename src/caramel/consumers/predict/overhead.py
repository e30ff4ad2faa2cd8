"""The analytic model with a fixed cost: time per unit = overhead + work / (devices × rate).

Small configurations are dominated by what does not scale with the work (launching kernels,
the optimiser step, the interpreter); large ones by the work. A power law fitted where the overhead
dominates grows too slowly beyond; this form carries the declared work outward. The overhead is a
power law in the swept parameters (and a factor per category level), the rate depends on devices
and the declared parallelism as in `analytic`:

    log t = log( exp(o + Σ a_i u_i) + exp(r + log(work/devices) - Σ c_k z_k) )

fitted by scipy's curve_fit in log space (relative errors). Its 90 % prediction interval is the
textbook one for nonlinear least squares: Student's t (n - p degrees of freedom) times
sqrt(J Cov Jᵀ + s²), J the gradient in the parameters at the point, Cov curve_fit's covariance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats
from scipy.optimize import OptimizeWarning, curve_fit
from sklearn.compose import ColumnTransformer

from caramel.consumers.predict.analytic import Analytic
from caramel.consumers.predict.features import Encoder
from caramel.consumers.predict.points import Point, Target
from caramel.consumers.predict.regression import Prediction, transformer


class AnalyticOverhead(Analytic):
    name = "analytic+overhead"

    def __init__(self, metric: str, is_time: bool) -> None:
        super().__init__(metric, is_time)
        self.encoder = Encoder()
        self.columns: ColumnTransformer | None = None
        self.theta: np.ndarray | None = None
        self.cov: np.ndarray | None = None
        self.dof = 0
        self.s2 = 0.0

    def _inputs(self, targets: Sequence[Target]) -> np.ndarray:
        decls = [d for d in map(self._declared, targets) if d is not None]
        if len(decls) != len(targets) or self.columns is None:
            raise ValueError("the overhead model's inputs are of declared targets, after fit")
        u = self.columns.transform(self.encoder.frame([t.config for t in targets]))
        z = self._frame(decls).to_numpy()
        work = np.array([[math.log(d.work / d.devices)] for d in decls])
        return np.hstack([u, z, work])

    def _model(self, width_u: int) -> Callable[..., np.ndarray]:
        def log_time(x: np.ndarray, *parameters: float) -> np.ndarray:
            theta = np.asarray(parameters)
            fixed = theta[0] + x[:, :width_u] @ theta[2 : 2 + width_u]
            scaled = theta[1] + x[:, -1] - x[:, width_u:-1] @ theta[2 + width_u :]
            log_seconds: np.ndarray = np.logaddexp(fixed, scaled)
            return log_seconds

        return log_time

    def fit(self, points: list[Point]) -> bool:
        usable = [p for p in points if self._measured_work(p)]
        if not super().fit(usable):
            return False
        self.encoder = Encoder.fit([p.config for p in usable])
        targets, y = self._observed(usable)
        self.columns = transformer(self.encoder.numeric, list(self.encoder.categories)).fit(
            self.encoder.frame([t.config for t in targets])
        )
        x = self._inputs(targets)
        if not _identifiable(usable, x):
            return False
        return self._fit_curve(x, y)

    def _measured_work(self, point: Point) -> bool:
        """Whether the point declares this metric's work and has samples."""
        return self._declared(point) is not None and bool(point.samples)

    def _fit_curve(self, x: np.ndarray, y: np.ndarray) -> bool:
        """The overhead's and the rate's parameters by curve_fit, and what the intervals need:
        their covariance, the degrees of freedom and the residual variance."""
        width_u = x.shape[1] - 1 - len(self.inputs)
        n_params = 2 + x.shape[1] - 1
        try:
            self.theta, self.cov = _curve_fit(self._model(width_u), x, y)
        except (RuntimeError, ValueError):
            return False
        residuals = y - self._model(width_u)(x, *self.theta)
        self.dof = len(y) - n_params
        self.s2 = float(residuals @ residuals / self.dof) if self.dof > 0 else math.nan
        self.width_u = width_u
        return bool(np.all(np.isfinite(self.cov)))

    def _observed(self, usable: list[Point]) -> tuple[list[Point], np.ndarray]:
        """Each positive sample's point, and the sample's log time (a throughput's negated log)."""
        observed = [(p, s) for p in usable for s in p.samples if s > 0]
        sign = self._sign
        return [p for p, _ in observed], np.array([sign * math.log(s) for _, s in observed])

    @property
    def _sign(self) -> float:
        """What the log of the metric is multiplied by to give the log time: 1 for a time, -1 for
        a throughput."""
        return 1.0 if self.is_time else -1.0

    def predict(self, targets: list[Target]) -> list[Prediction]:
        out: list[Prediction] = [None] * len(targets)
        usable = [i for i, t in enumerate(targets) if self._knows(t)]
        if not usable or self.theta is None or self.cov is None:
            return out
        x = self._inputs([targets[i] for i in usable])
        value, half = self._interval(x, self.theta, self.cov)
        for i, v, h in zip(usable, value, half, strict=True):
            out[i] = (self._sign * float(v), float(h))
        return out

    def _interval(
        self, x: np.ndarray, theta: np.ndarray, cov: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The log time at each row of `x` and its 90 % interval's half width."""
        log_time = self._model(self.width_u)
        grad = _gradient(log_time, x, theta)
        var = np.einsum("ij,jk,ik->i", grad, cov, grad) + self.s2
        return log_time(x, *theta), stats.t.ppf(0.95, self.dof) * np.sqrt(var)

    def _knows(self, target: Target) -> bool:
        """Whether the target declares the work and brings no value the fit never saw."""
        return self._declared(target) is not None and not self.encoder.declines(target.config)


def _identifiable(usable: list[Point], x: np.ndarray) -> bool:
    """Whether there are more configurations than parameters (two offsets, a coefficient per
    input but the work) and the work varied."""
    return len({p.key for p in usable}) > x.shape[1] + 1 and bool(np.ptp(x[:, -1]) != 0)


def _curve_fit(
    log_time: Callable[..., np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """curve_fit's parameters and covariance, from an overhead of half the fastest sample and the
    median rate, no parameter having an effect."""
    start = [float(np.min(y)) + math.log(0.5), float(np.median(y - x[:, -1]))] + [0.0] * (
        x.shape[1] - 1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        theta, cov = curve_fit(log_time, x, y, p0=start, maxfev=20000)
    return theta, cov


def _gradient(log_time: Callable[..., np.ndarray], x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The model's gradient in its parameters at each row of `x`, by central differences (the
    model is smooth)."""
    grad = np.empty((len(x), len(theta)))
    for j in range(len(theta)):
        step = np.zeros(len(theta))
        step[j] = 1e-6
        grad[:, j] = (log_time(x, *(theta + step)) - log_time(x, *(theta - step))) / 2e-6
    return grad
