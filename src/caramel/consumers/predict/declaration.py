"""The work a benchmark file declares for a workpackage: ordinary parameters with reserved names.

    predict_work         work of one unit of the metric below (FLOP per iteration, per image)
    predict_work_metric  the metric (a table column title) the work governs: a time per unit
                         (`Time/iteration(s)`) or units per second (`Images/second`)
    predict_devices      devices the work is spread over (default: total_devices, else 1)
    predict_parallel     optional: names of parameters the sustained rate may depend on (tp_size
    pp_size) predict_job_units    optional: units in one job (iterations, images): job time = units
    x time per unit predict_job_limit    optional: seconds after which the job stops by itself
    (Megatron's exit duration)

Being parameters, they expand as any other (tags, python mode) and JUBE ignores them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WORK, METRIC, DEVICES, PARALLEL, JOB_UNITS, JOB_LIMIT = (
    "predict_work",
    "predict_work_metric",
    "predict_devices",
    "predict_parallel",
    "predict_job_units",
    "predict_job_limit",
)


@dataclass
class Declaration:
    metric: str
    work: float
    devices: float = 1.0
    parallel: dict[str, float] = field(default_factory=dict)
    job_units: float | None = None
    job_limit: float | None = None


def _positive(value: object) -> float | None:
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def declaration(params: dict[str, object] | None) -> Declaration | None:
    """The declaration in a workpackage's parameters, or None (no work declared, or not a
    number)."""
    if not params or WORK not in params or METRIC not in params:
        return None
    work = _positive(params[WORK])
    devices = _positive(params.get(DEVICES, params.get("total_devices", 1)))
    if work is None or devices is None:
        return None
    # _positive reads an absent job setting (None) as none too
    units, limit = _positive(params.get(JOB_UNITS)), _positive(params.get(JOB_LIMIT))
    metric = str(params[METRIC]).strip()
    return Declaration(metric, work, devices, _parallel(params), units, limit)


def _parallel(params: dict[str, object]) -> dict[str, float]:
    """The declared parallelism: each parameter `predict_parallel` names that is above 0."""
    named = str(params.get(PARALLEL, "")).replace(",", " ").split()
    values = {name: _positive(params.get(name)) for name in named}
    return {name: value for name, value in values.items() if value is not None}
