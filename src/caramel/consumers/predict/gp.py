"""A Gaussian process over the log parameters (scikit-learn's GaussianProcessRegressor).

Kernel: a linear term (DotProduct: a power law, which is what it extrapolates to), a smooth
correction (an RBF with a length per parameter) and the measurement noise (WhiteKernel). Its
predictive standard deviation includes the noise, so mean ± 1.645 sd is a 90 % prediction interval.
Hyperparameters by maximum likelihood, from a fixed seed: the same history gives the same model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, WhiteKernel
from sklearn.pipeline import Pipeline, make_pipeline

from caramel.consumers.predict.features import Encoder
from caramel.consumers.predict.points import Point, Target
from caramel.consumers.predict.regression import Z90, Prediction, per_target, rows, transformer

if TYPE_CHECKING:
    import pandas as pd
    from sklearn.gaussian_process.kernels import Kernel


class GaussianProcess:
    name = "gaussian-process"

    def __init__(self, kernel: Kernel | None = None) -> None:
        self.encoder = Encoder()
        self.pipeline: Pipeline | None = None
        self.kernel = kernel  # given: fixed hyperparameters (leave-one-out after the full fit)

    def validation_maker(self) -> Callable[[], GaussianProcess]:
        """Leave-one-out keeps the hyperparameters of the fit on all points (Rasmussen & Williams,
        5.4.2): twelve optimisations would cost minutes and change little."""
        kernel = self.pipeline[-1].kernel_ if self.pipeline is not None else None
        return lambda: GaussianProcess(kernel)

    def fit(self, points: list[Point]) -> bool:
        self.encoder = Encoder.fit([p.config for p in points])
        width = self.encoder.width
        if width == 0 or len(points) < width + 3:
            return False
        configs, y = rows(points, lambda p: p.config)
        kernel = self.kernel or (
            DotProduct(sigma_0=1.0, sigma_0_bounds=(1e-3, 1e3))
            + ConstantKernel(0.1, (1e-4, 1e2)) * RBF(np.ones(width), (1e-1, 1e3))
            + WhiteKernel(1e-2, (1e-6, 1.0))
        )
        regressor = GaussianProcessRegressor(
            kernel,
            normalize_y=True,
            random_state=0,
            n_restarts_optimizer=0 if self.kernel else 1,
            optimizer=None if self.kernel else "fmin_l_bfgs_b",
        )
        self.pipeline = make_pipeline(
            transformer(self.encoder.numeric, list(self.encoder.categories)), regressor
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.pipeline.fit(self.encoder.frame(configs), y)
        return True

    def predict(self, targets: list[Target]) -> list[Prediction]:
        pipeline = self.pipeline
        if pipeline is None:
            return [None] * len(targets)

        def with_interval(frame: pd.DataFrame) -> list[Prediction]:
            mean, sd = pipeline.predict(frame, return_std=True)
            return [(float(m), float(Z90 * s)) for m, s in zip(mean, sd, strict=True)]

        return per_target(self.encoder, targets, with_interval)
