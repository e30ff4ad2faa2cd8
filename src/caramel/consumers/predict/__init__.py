"""`bench predict`: the cost of configurations not yet run, learned from the history.

    targets = targets_of(plan)                              # the plan's workpackages, per table
    data = load_points(history, bench, system)              # every measured figure of this
    benchmark predictions = predict(data, targets)                    # models chosen by
    leave-one-out

Models (one module each): `powerlaw` (power laws in the swept numeric parameters, with their
products, fitted in log space), `gp` (a Gaussian process, scikit-learn), `analytic` (time = declared
work / (devices x a learned sustained rate)); `select` validates them leave-one-out and picks one
per metric; `suggest` says what to measure next. `--method kernels` (docs/microbench.md): `kernels`
(per-system kernel models from the microbenchmark suite), `profile` (a workload's kernels per
iteration), `bykernels` (their sum, with communication and the per-launch overhead). docs/predict.md
describes all of it.
"""

from caramel.consumers.predict.declaration import Declaration, declaration
from caramel.consumers.predict.points import (
    MetricData,
    Point,
    Prediction,
    Target,
    load_points,
    targets_of,
)
from caramel.consumers.predict.service import predict, validate

__all__ = [
    "Declaration",
    "MetricData",
    "Point",
    "Prediction",
    "Target",
    "declaration",
    "load_points",
    "predict",
    "targets_of",
    "validate",
]
