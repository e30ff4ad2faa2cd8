"""How the page judges a figure against the run before or a baseline: `bench compare`'s rule
(history.compare: Welch's t at 99 % with repeats on both sides), except that a pair where either side
is one sample is "cannot judge spread", never a regression or an improvement. One sample says nothing
of the noise: on a loaded login node one sample moves ±20 % from run to run, and the compare rule's
5 % threshold would paint that red."""

from __future__ import annotations

from caramel.consumers.history.compare import judge
from caramel.consumers.pages.sources import Figure

NO_SPREAD = "cannot judge spread"


def judged(current: Figure, before: Figure) -> tuple[str, float]:
    """The verdict on `current` against `before`, and the change in %."""
    verdict = judge(current, before.mean, before.sd, before.n, None)
    if (current.n < 2 or before.n < 2) and verdict.verdict != "no baseline":
        return NO_SPREAD, verdict.diff_pct
    return verdict.verdict, verdict.diff_pct
