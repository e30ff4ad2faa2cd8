"""How the page judges a figure against the run before or a baseline: `bench compare`'s rule,
by the same function (history.compare.judge; docs/history.md), without a threshold: a pair where
either side is one sample has no spread and is "cannot judge", never a regression or an
improvement. One sample says nothing of the noise: on a loaded login node one sample moves ±20 %
from run to run."""

from __future__ import annotations

from caramel.consumers.history.compare import Verdict, judge, judge_pairs
from caramel.consumers.pages.sources import Figure


def judgement(current: Figure, before: Figure) -> Verdict[Figure]:
    """The whole verdict on `current` against `before`: the change, the ratio and its interval
    (not the repetitions that would decide an undecided one: the page shows no such advice)."""
    return judge(current, before.mean, before.sd, before.n, None, advise=False)


def judged(current: Figure, before: Figure) -> tuple[str, float]:
    """The verdict on `current` against `before`, and the change in %."""
    verdict = judgement(current, before)
    return verdict.verdict, verdict.diff_pct


def judged_words(pairs: list[tuple[Figure, Figure]]) -> list[str]:
    """The verdict on each `current` against its `before` (judged(), the pairs' intervals at
    once)."""
    verdicts = judge_pairs([(current, b.mean, b.sd, b.n) for current, b in pairs])
    return [verdict.verdict for verdict in verdicts]
