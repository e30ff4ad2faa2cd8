"""The pieces every model shares: one training row per measured sample, log targets, and a
Bayesian linear regression (scikit-learn's BayesianRidge: its predictive standard deviation
includes the noise, so mean ± 1.645 sd is a 90 % prediction interval in log space).

With no input that varies the model is a constant: the mean of the log samples, with Student's t
prediction interval (scipy) for one more sample.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import BayesianRidge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures, StandardScaler

if TYPE_CHECKING:
    from caramel.consumers.predict.features import Encoder
    from caramel.consumers.predict.points import Point, Target

Z90 = stats.norm.ppf(0.95)  # a 90 % interval is mean ± Z90 sd
Prediction = (
    tuple[float, float] | None
)  # (log value, half width of the 90 % interval in log), None: declines


Row = TypeVar("Row")


def rows(points: Sequence[Point], values: Callable[[Point], Row]) -> tuple[list[Row], np.ndarray]:
    """One row per sample: the point's `values(point)` repeated, and the samples' logarithms."""
    xs: list[Row] = []
    ys: list[float] = []
    for point in points:
        for sample in point.samples:
            if sample > 0:
                xs.append(values(point))
                ys.append(math.log(sample))
    return xs, np.asarray(ys)


def per_target(
    encoder: Encoder,
    targets: Sequence[Target],
    predict_frame: Callable[[pd.DataFrame], Sequence[Prediction]],
) -> list[Prediction]:
    """Each target's prediction (None where the encoder declines its configuration): the ones it
    takes are predicted in one call of `predict_frame(frame)`, which returns a Prediction per
    row."""
    out: list[Prediction] = [None] * len(targets)
    usable = [i for i, t in enumerate(targets) if not encoder.declines(t.config)]
    if usable:
        found = predict_frame(encoder.frame([targets[i].config for i in usable]))
        for i, prediction in zip(usable, found, strict=True):
            out[i] = prediction
    return out


def transformer(
    numeric: list[str], categories: list[str], products: bool = False
) -> ColumnTransformer:
    steps = [PolynomialFeatures(2, interaction_only=True, include_bias=False)] if products else []
    return ColumnTransformer(
        [
            ("num", make_pipeline(*steps, StandardScaler()), numeric),
            ("cat", OneHotEncoder(drop="first", handle_unknown="ignore"), categories),
        ],
        sparse_threshold=0,
    )


class LogLinear:
    """BayesianRidge on a frame of inputs (log parameters, categories), or a constant."""

    def __init__(self, numeric: list[str], categories: list[str], products: bool = False) -> None:
        self.numeric, self.categories, self.products = numeric, categories, products
        self.pipeline: Pipeline | None = None
        self.mean = self.half = math.nan

    def fit(self, frame: pd.DataFrame, y: np.ndarray) -> LogLinear:
        if not self.numeric and not self.categories:
            n = len(y)
            self.mean = float(np.mean(y))
            sd = float(np.std(y, ddof=1)) if n > 1 else math.nan
            self.half = (
                float(stats.t.ppf(0.95, n - 1) * sd * math.sqrt(1 + 1 / n)) if n > 1 else math.nan
            )
            return self
        self.pipeline = make_pipeline(
            transformer(self.numeric, self.categories, self.products), BayesianRidge()
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.pipeline.fit(frame, y)
        return self

    def predict(self, frame: pd.DataFrame) -> list[tuple[float, float]]:
        if self.pipeline is None:
            return [(self.mean, self.half)] * len(frame)
        mean, sd = self.pipeline.predict(frame, return_std=True)
        return [(float(m), float(Z90 * s)) for m, s in zip(mean, sd, strict=True)]

    def design(self, frame: pd.DataFrame) -> np.ndarray | None:
        """The regression's inputs for `frame` (what its coefficients multiply), for `suggest`."""
        if self.pipeline is None:
            return None
        inputs: np.ndarray = self.pipeline[:-1].transform(frame)
        return inputs
