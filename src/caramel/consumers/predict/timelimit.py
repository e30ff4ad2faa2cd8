"""`bench run --time-from-prediction`: a job's time limit (SLURM's `--time`) from the predicted job
time.

Used only where the file sets no `timelimit` (JUBE's platform name for it; a system file's
`time_limit` is a default the prediction replaces). The limit is the high end of the 90 % interval
of the longest predicted job of the run, plus a margin (default 25 %), rounded up to whole
minutes: a job killed at its limit costs more than one that waits a little longer in the queue.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable

from caramel.consumers.predict.cost import JobCost
from caramel.stages.spec import model as m

PARAMETER = "timelimit"
SET_NAME = "caramel_predicted_time"


def whole_minutes(seconds: float) -> float:
    """`seconds` rounded up to whole minutes, at least one."""
    return 60.0 * max(1, math.ceil(seconds / 60))


def file_sets_time(bench: m.Benchmark) -> bool:
    return any(
        p.name == PARAMETER
        for pset in bench.parametersets.values()
        if pset.name != "system"
        for p in pset.parameters
    )


def with_predicted_time(
    bench: m.Benchmark, costs: list[JobCost], margin: float, time_text: Callable[[float], str]
) -> tuple[m.Benchmark, str]:
    """`bench` whose submitted steps use the predicted limit, written by `time_text` (the system's
    scheduler's: SLURM's `[D-]HH:MM:SS`), and a line saying what was done."""
    if file_sets_time(bench):
        return bench, "the file sets timelimit: the job's --time is the file's, not the prediction"
    highs = [c.seconds[2] if math.isfinite(c.seconds[2]) else c.seconds[0] for c in costs]
    if not highs:
        return (
            bench,
            "no workpackage could be predicted: the job's --time stays the system's default",
        )
    limit = time_text(whole_minutes(max(highs) * (1 + margin)))
    bench = copy.copy(bench)
    pset = m.Parameterset(SET_NAME, [m.Parameter(PARAMETER, limit)])
    bench.parametersets = dict(bench.parametersets, **{SET_NAME: pset})
    steps = {}
    for name, step in bench.steps.items():
        steps[name] = (
            dataclasses.replace(step, uses=[*step.uses, m.Use([SET_NAME])]) if step.submit else step
        )
    bench.steps = steps
    return bench, (
        f"job --time {limit}: the longest predicted job's 90 % high end "
        f"({max(highs):.0f} s) + {100 * margin:.0f} %"
    )
