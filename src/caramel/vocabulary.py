"""The words every stage shares: run states, statistic names, booleans.

One list of each, so a new state or statistic is added in one place and every stage agrees on it.
"""

from __future__ import annotations

from enum import Enum

# A workpackage's states in the run record (state.store), in the order `bench status` shows them.
STATES = ("open", "running", "waiting", "done", "failed", "cancelled")
ACTIVE_STATES = ("running", "waiting")  # a bench or a job is working on it

# JUBE's statistics of a pattern, as `<name>_<stat>` columns.
STATISTICS = ("first", "last", "min", "max", "avg", "sum", "cnt", "std")
UNIT_STATISTICS = ("first", "last", "min", "max", "avg", "sum", "std")  # JUBE gives _cnt no unit
FLOAT_STATISTICS = ("avg", "std")  # a float whatever the pattern's type
SAME_TYPE_STATISTICS = ("first", "last", "min", "max", "sum")  # the pattern's own type

# Booleans of attributes (`dotall="yes"`) and conditions (`active="false"`).
TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")


def plain_bool(text: str) -> bool | None:
    """True/False for a plain boolean word, None for anything else (an empty text is not plain)."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


class Direction(str, Enum):
    """Which way a figure is better. UNKNOWN: neither its declaration, its unit nor its name decides,
    so a verdict on it says it cannot judge instead of guessing (docs/history.md)."""

    HIGHER = "higher"
    LOWER = "lower"
    UNKNOWN = "unknown"


# The rows of a table of copies (`caramel_copy` column) that are not one copy's figure: the aggregate
# a benchmark declares (its result) and the spread over the copies (never judged as a benchmark).
COPY_AGGREGATES = ("sum", "mean")
COPY_SPREADS = ("sd", "sem")
