"""What to measure next: the few configurations of the plan that would most reduce the
uncertainty of the requested predictions.

First every configuration that brings a value never measured (a new category level, another value
of a parameter the history never varied): no model can say anything about it until one is run.
Then, when the plain power law could be fitted, greedily the candidate that most reduces the summed
predictive variance over the requested configurations: for a Bayesian linear model, measuring x
shrinks the coefficients' covariance S to S - S x xᵀ S / (σ² + xᵀ S x) (BayesianRidge gives S and
σ²). With history too thin for any model, the candidates farthest from everything measured (and
chosen) in the scaled log-parameter space (maximin, scipy's cdist).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.preprocessing import StandardScaler

from caramel.consumers.predict.features import Encoder
from caramel.consumers.predict.points import Point, Target
from caramel.consumers.predict.powerlaw import PowerLaw


def suggest(
    points: list[Point], candidates: list[Target], targets: list[Target], n: int
) -> list[tuple[Target, str]]:
    pool = _unmeasured(points, candidates)
    chosen = _new_values(points, pool, n)
    picked = {id(candidate) for candidate, _ in chosen}
    pool = [c for c in pool if id(c) not in picked]
    if len(chosen) >= n or not pool:
        return chosen[:n]
    return chosen + _most_informative(points, pool, targets, n - len(chosen))


def _unmeasured(points: list[Point], candidates: list[Target]) -> list[Target]:
    """The candidates the history has not measured, each configuration once (its last)."""
    measured = {p.key for p in points}
    return list({c.key: c for c in candidates if c.key not in measured}.values())


def _new_values(points: list[Point], pool: list[Target], n: int) -> list[tuple[Target, str]]:
    """Up to `n` candidates, the first to bring each value the history never measured."""
    if not points:
        return []
    encoder = Encoder.fit([p.config for p in points])
    seen: set[str] = set()
    chosen: list[tuple[Target, str]] = []
    for candidate in pool:
        why = encoder.declines(candidate.config)
        if why and why not in seen:
            seen.add(why)
            chosen.append((candidate, f"new: {why}"))
    return chosen[:n]


def _most_informative(
    points: list[Point], pool: list[Target], targets: list[Target], n: int
) -> list[tuple[Target, str]]:
    """The greedy choice of the power law where it fits and knows the candidates; else the
    maximin choice."""
    model = _fitted_power_law(points)
    if model is not None:
        known = _known_to(model, pool)
        wanted = _known_to(model, targets) or known
        if known:
            return _greedy(model, known, wanted, n)
    return _maximin(points, pool, n)


def _known_to(model: PowerLaw, configurations: list[Target]) -> list[Target]:
    """The configurations whose every value the model's encoder has seen."""
    return [c for c in configurations if not model.encoder.declines(c.config)]


def _fitted_power_law(points: list[Point]) -> PowerLaw | None:
    """The plain power law fitted to the history with its Bayesian regression; None where the
    history is too thin for it."""
    model = PowerLaw(False)
    if not points or not model.fit(points):
        return None
    if model.regression is None or model.regression.pipeline is None:
        return None
    return model


def _greedy(
    model: PowerLaw, pool: list[Target], targets: list[Target], n: int
) -> list[tuple[Target, str]]:
    reg = model.regression
    assert (
        reg is not None and reg.pipeline is not None
    )  # suggest() calls it on a fitted regression only
    ridge = reg.pipeline[-1]
    cov, noise = ridge.sigma_.copy(), 1.0 / ridge.alpha_
    xs = reg.design(model.encoder.frame([c.config for c in pool]))
    ts = reg.design(model.encoder.frame([t.config for t in targets]))
    assert xs is not None and ts is not None
    before = _summed_variance(ts, cov)
    out = []
    left = list(range(len(pool)))
    for _ in range(min(n, len(pool))):
        best = left[int(np.argmax([_gain(cov, xs[i], ts, noise) for i in left]))]
        sx = cov @ xs[best]
        cov = cov - np.outer(sx, sx) / (noise + xs[best] @ sx)
        out.append((pool[best], _variance_reason(before, _summed_variance(ts, cov))))
        left.remove(best)
    return out


def _summed_variance(ts: np.ndarray, cov: np.ndarray) -> float:
    """The summed model variance of the predictions at the design rows `ts`."""
    return float(np.einsum("ij,jk,ik->", ts, cov, ts))


def _gain(cov: np.ndarray, x: np.ndarray, ts: np.ndarray, noise: float) -> float:
    """How much measuring at the design row `x` lowers the summed variance at `ts`."""
    sx = cov @ x
    return float(np.sum((ts @ sx) ** 2) / (noise + x @ sx))


def _variance_reason(before: float, after: float) -> str:
    if before <= 0:
        return "most informative"
    return (
        "with those above: the requested predictions' model variance "
        f"-{100 * (1 - after / before):.0f} %"
    )


def _maximin(points: list[Point], pool: list[Target], n: int) -> list[tuple[Target, str]]:
    space = _scaled_space([p.config for p in points] + [c.config for c in pool])
    if space.shape[1] == 0:
        return [(c, "nothing varies") for c in pool[:n]]
    taken = list(range(len(points)))
    out = []
    left = list(range(len(points), len(space)))
    for _ in range(min(n, len(left))):
        best = left[int(np.argmax(_distance(space, left, taken)))]
        out.append(
            (
                pool[best - len(points)],
                "history too thin for a model: farthest from what was measured",
            )
        )
        taken.append(best)
        left.remove(best)
    return out


def _scaled_space(configs: list[dict[str, str]]) -> np.ndarray:
    """The configurations as rows: numeric parameters standardised, one 0/1 column per category
    level."""
    encoder = Encoder.fit(configs)
    frame = encoder.frame(configs)
    numeric = (
        StandardScaler().fit_transform(frame[encoder.numeric])
        if encoder.numeric
        else np.zeros((len(configs), 0))
    )
    cats = [
        np.asarray(frame[name] == level, dtype=float)[:, None]
        for name, levels in encoder.categories.items()
        for level in levels
    ]
    return np.hstack([numeric, *cats]) if cats else numeric


def _distance(space: np.ndarray, left: list[int], taken: list[int]) -> np.ndarray:
    """Each row left's distance to the nearest row taken."""
    distance: np.ndarray  # numpy's and scipy's answers are untyped
    if taken:
        distance = cdist(space[left], space[taken]).min(axis=1)
    else:  # nothing measured: start from the configuration farthest from the centre
        distance = np.linalg.norm(space[left] - space.mean(axis=0), axis=1)
    return distance
