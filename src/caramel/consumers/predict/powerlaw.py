"""Power laws in the swept numeric parameters: log y = a + Σ b_i log x_i (+ a term per category
level), and the same with the products of every pair of log parameters (b_ij log x_i log x_j: a
power law whose exponents change with the other parameters). Fitted in log space by BayesianRidge
(caramel.consumers.predict.regression), so the noise of the repeats makes the interval."""

from __future__ import annotations

from caramel.consumers.predict.features import Encoder
from caramel.consumers.predict.points import Point, Target
from caramel.consumers.predict.regression import LogLinear, Prediction, per_target, rows


class PowerLaw:
    def __init__(self, products: bool = False) -> None:
        self.products = products
        self.name = "powerlaw×products" if products else "powerlaw"
        self.encoder = Encoder()
        self.regression: LogLinear | None = None

    def minimum_points(self, encoder: Encoder) -> int:
        """The products need more configurations than terms; the plain law, with BayesianRidge's
        prior holding the exponents near zero, fits any two (unvalidated until there are three);
        with nothing varying it is the mean of the repeats."""
        k = len(encoder.numeric)
        if self.products:
            return encoder.width + k * (k - 1) // 2 + 2
        return 2 if encoder.width else 1

    def fit(self, points: list[Point]) -> bool:
        self.encoder = Encoder.fit([p.config for p in points])
        if len(points) < self.minimum_points(self.encoder) or (
            self.products and len(self.encoder.numeric) < 2
        ):
            return False
        configs, y = rows(points, lambda p: p.config)
        if len(y) == 0:
            return False
        self.regression = LogLinear(
            self.encoder.numeric, list(self.encoder.categories), self.products
        )
        self.regression.fit(self.encoder.frame(configs), y)
        return True

    def predict(self, targets: list[Target]) -> list[Prediction]:
        if self.regression is None:
            return [None] * len(targets)
        return per_target(self.encoder, targets, self.regression.predict)
