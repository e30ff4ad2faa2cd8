"""A campaign's score and failure rate, as milabench's report makes them for its suite
(milabench/report/__init__.py: `_make_row` per benchmark, `make_report`'s weighted geometric mean).

Per member figure (a benchmark's result whose larger values are better): its score is its figure
(with copies the sum of each copy's estimate over its lines, milabench's sum over its GPUs) times
its success ratio, 1 - failed / ran workpackages; a member without a figure scores 0. The suite's
score is exp(sum(w * log(score + 1)) / sum(w)) with each member's `meta: weight` (default 1), so a
member that failed pulls the score down by its weight; the failure rate is the failed workpackages
over all of them. The numbers are numpy's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class MemberScore:
    name: str
    figure: float  # its result (NaN: none, it scores 0)
    weight: float
    ran: int  # its workpackages: milabench's n (one per GPU and run)
    failed: int

    @property
    def score(self) -> float:
        """milabench's score: the figure times the share of workpackages that succeeded."""
        return self.figure * (1 - self.failed / max(self.ran, 1))


@dataclass(frozen=True)
class SuiteScore:
    score: float  # NaN: the weights sum to 0
    failure_rate: float
    members: list[MemberScore]


def suite_score(members: list[MemberScore]) -> SuiteScore:
    import numpy as np

    scores = np.nan_to_num(np.array([m.score for m in members], dtype=float), nan=0.0)
    weights = np.array([m.weight for m in members], dtype=float)
    total = float(weights.sum())
    score = float(np.exp(np.sum(np.log(scores + 1) * weights) / total)) if total > 0 else math.nan
    ran = sum(m.ran for m in members)
    return SuiteScore(score, sum(m.failed for m in members) / max(ran, 1), members)
