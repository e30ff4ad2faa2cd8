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
        usable = [p for p in points if self._declared(p) is not None and p.samples]
        if not super().fit(usable):
            return False
        self.encoder = Encoder.fit([p.config for p in usable])
        targets = [p for p in usable for s in p.samples if s > 0]
        y = np.array(
            [
                math.log(s) if self.is_time else -math.log(s)
                for p in usable
                for s in p.samples
                if s > 0
            ]
        )
        self.columns = transformer(self.encoder.numeric, list(self.encoder.categories)).fit(
            self.encoder.frame([t.config for t in targets])
        )
        x = self._inputs(targets)
        width_u = x.shape[1] - 1 - len(self.inputs)
        n_params = 2 + x.shape[1] - 1
        if len({p.key for p in usable}) <= n_params or np.ptp(x[:, -1]) == 0:
            return False
        start = [float(np.min(y)) + math.log(0.5), float(np.median(y - x[:, -1]))] + [0.0] * (
            x.shape[1] - 1
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizeWarning)
                self.theta, self.cov = curve_fit(self._model(width_u), x, y, p0=start, maxfev=20000)
        except (RuntimeError, ValueError):
            return False
        theta, cov = self.theta, self.cov
        residuals = y - self._model(width_u)(x, *theta)
        self.dof = len(y) - n_params
        self.s2 = float(residuals @ residuals / self.dof) if self.dof > 0 else math.nan
        self.width_u = width_u
        return bool(np.all(np.isfinite(cov)))

    def predict(self, targets: list[Target]) -> list[Prediction]:
        out: list[Prediction] = [None] * len(targets)
        usable = [
            i
            for i, t in enumerate(targets)
            if self._declared(t) is not None and not self.encoder.declines(t.config)
        ]
        if not usable or self.theta is None or self.cov is None:
            return out
        x = self._inputs([targets[i] for i in usable])
        log_time = self._model(self.width_u)
        value = log_time(x, *self.theta)
        grad = np.empty((len(usable), len(self.theta)))
        for j in range(
            len(self.theta)
        ):  # the gradient by central differences (the model is smooth)
            step = np.zeros(len(self.theta))
            step[j] = 1e-6
            grad[:, j] = (
                log_time(x, *(self.theta + step)) - log_time(x, *(self.theta - step))
            ) / 2e-6
        var = np.einsum("ij,jk,ik->i", grad, self.cov, grad) + self.s2
        half = stats.t.ppf(0.95, self.dof) * np.sqrt(var)
        for i, v, h in zip(usable, value, half, strict=True):
            out[i] = (float(v) if self.is_time else -float(v), float(h))
        return out
