"""The estimator a step declares for its figures: which samples a mean and an sd are taken over,
and the sd's delta degrees of freedom (ddof). Written `estimator: all` (YAML key, XML attribute):

    all             every sample; sd with ddof=1 (the default)
    trimmed         without the smallest and the largest sample when there are at least 5; ddof=1
    milabench       milabench's: trimmed, with the population sd (ddof=0)
    all ddof=0      any of them with another ddof (0 or 1)

The numbers are computed in analyse/estimators.py; this module only reads and names the choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from caramel.errors import Location, SpecError

TRIM_FROM = 5  # milabench drops the min and the max sample only from 5 samples on


class Samples(str, Enum):
    """Which samples a mean is taken over."""

    ALL = "all"
    TRIMMED = "trimmed"  # without the min and the max (at least TRIM_FROM samples)


@dataclass(frozen=True)
class Estimator:
    samples: Samples = Samples.ALL
    ddof: int = 1

    @property
    def text(self) -> str:
        """The declaration that gives this estimator back (`parse_estimator(e.text) == e`)."""
        return self.samples.value + ("" if self.ddof == 1 else f" ddof={self.ddof}")

    @property
    def caption(self) -> str:
        """What a table says it used: `estimator: mean of all samples, sd ddof=1`."""
        what = (
            "mean of all samples"
            if self.samples is Samples.ALL
            else f"mean without the min and max sample (from {TRIM_FROM} samples on)"
        )
        return f"estimator: {what}, sd ddof={self.ddof}"


DEFAULT = Estimator()
NAMES = {
    "all": DEFAULT,
    "trimmed": Estimator(Samples.TRIMMED, 1),
    "milabench": Estimator(Samples.TRIMMED, 0),
}


def parse_estimator(text: str, where: Location | None = None) -> Estimator:
    """`all`, `trimmed` or `milabench`, optionally followed by `ddof=0` or `ddof=1`."""
    words = text.split()
    hint = (
        "expected all, trimmed or milabench, optionally with ddof=0 or ddof=1 (estimator: "
        "milabench)"
    )
    if not words or words[0].lower() not in NAMES or len(words) > 2:
        raise SpecError(f"estimator {text!r} is not an estimator", where, hint=hint)
    chosen = NAMES[words[0].lower()]
    if len(words) == 2:
        key, _, value = words[1].partition("=")
        if key.lower() != "ddof" or value not in ("0", "1"):
            raise SpecError(
                f"estimator {text!r}: {words[1]!r} is not ddof=0 or ddof=1", where, hint=hint
            )
        chosen = Estimator(chosen.samples, int(value))
    return chosen
