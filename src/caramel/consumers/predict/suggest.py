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
    measured = {p.key for p in points}
    pool = list({c.key: c for c in candidates if c.key not in measured}.values())
    chosen: list[tuple[Target, str]] = []
    encoder = Encoder.fit([p.config for p in points]) if points else None
    if encoder is not None:
        seen: set[str] = set()
        for candidate in pool:
            why = encoder.declines(candidate.config)
            if why and why not in seen and len(chosen) < n:
                seen.add(why)
                chosen.append((candidate, f"new: {why}"))
    pool = [c for c in pool if all(c is not picked for picked, _ in chosen)]
    if len(chosen) >= n or not pool:
        return chosen[:n]
    model = PowerLaw(False)
    if (
        points
        and model.fit(points)
        and model.regression is not None
        and model.regression.pipeline is not None
    ):
        known = [c for c in pool if not model.encoder.declines(c.config)]
        wanted = [t for t in targets if not model.encoder.declines(t.config)] or known
        if known:
            return chosen + _greedy(model, known, wanted, n - len(chosen))
    return chosen + _maximin(points, pool, n - len(chosen))


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
    before = float(np.einsum("ij,jk,ik->", ts, cov, ts))
    out = []
    left = list(range(len(pool)))
    for _ in range(min(n, len(pool))):
        gains = []
        for i in left:
            sx = cov @ xs[i]
            gains.append(float(np.sum((ts @ sx) ** 2) / (noise + xs[i] @ sx)))
        best = left[int(np.argmax(gains))]
        sx = cov @ xs[best]
        cov = cov - np.outer(sx, sx) / (noise + xs[best] @ sx)
        after = float(np.einsum("ij,jk,ik->", ts, cov, ts))
        out.append(
            (
                pool[best],
                f"with those above: the requested predictions' model variance "
                f"-{100 * (1 - after / before):.0f} %"
                if before > 0
                else "most informative",
            )
        )
        left.remove(best)
    return out


def _maximin(points: list[Point], pool: list[Target], n: int) -> list[tuple[Target, str]]:
    configs = [p.config for p in points] + [c.config for c in pool]
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
    space = np.hstack([numeric, *cats]) if cats else numeric
    if space.shape[1] == 0:
        return [(c, "nothing varies") for c in pool[:n]]
    taken = list(range(len(points)))
    out = []
    left = list(range(len(points), len(configs)))
    for _ in range(min(n, len(left))):
        if taken:
            distance = cdist(space[left], space[taken]).min(axis=1)
        else:  # nothing measured: start from the configuration farthest from the centre
            distance = np.linalg.norm(space[left] - space.mean(axis=0), axis=1)
        best = left[int(np.argmax(distance))]
        out.append(
            (
                pool[best - len(points)],
                "history too thin for a model: farthest from what was measured",
            )
        )
        taken.append(best)
        left.remove(best)
    return out
