"""The words every stage shares: run states, statistic names, booleans.

One list of each, so a new state or statistic is added in one place and every stage agrees on it.
A closed vocabulary is a `Word` enum: each member is its stored text (it compares equal to the plain
string, hashes like it, and prints, formats and serialises as it, to JSON and SQLite alike), so run
records and history files written before read the same and a typo in a word is a type error.
"""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A member of a closed vocabulary, which is its text wherever a string goes (f-strings and repr
    included)."""

    def __repr__(self) -> str:  # as the text it was before it was a word: messages quote it so
        return str.__repr__(self)

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


class WpState(Word):
    """A workpackage's state in the run record (state.store); moves between them:
    state/transitions.py."""

    OPEN = "open"
    RUNNING = "running"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


# The states in the order `bench status` shows them (plain texts: table headings, JSON keys).
STATES = tuple(state.value for state in WpState)
ACTIVE_STATES = (WpState.RUNNING, WpState.WAITING)  # a bench or a job is working on it


class WaitKind(Word):
    """What a waiting workpackage waits for (`WpRow.wait_kind`); NONE when it is not waiting."""

    NONE = ""
    FILE = "file"  # the done file of an asynchronous do (or of a job it submitted)
    SHARED = "shared"  # the barrier of its step's shared do


class Role(Word):
    """What a command of a workpackage is (`Command.role`; the run record's `commands.kind`
    column)."""

    DO = "do"
    PREPARE = "prepare"  # a fileset's <prepare>
    SHARED = "shared"  # a step's shared do, run once for all its workpackages


class JobStatus(Word):
    """A batch job's state as caramel follows it (`backends.JobState.state`), whatever the
    scheduler's words."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    GONE = "gone"  # the scheduler no longer knows it


class VerdictWord(Word):
    """A comparison's verdict on a figure (history/compare.py; `bench compare`, pages)."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    WITHIN_NOISE = "within noise"
    NO_BASELINE = "no baseline"
    CANNOT_JUDGE = "cannot judge"  # its direction is unknown


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


class Direction(Word):
    """Which way a figure is better. UNKNOWN: neither its declaration, its unit nor its name
    decides, so a verdict on it says it cannot judge instead of guessing (docs/history.md)."""

    HIGHER = "higher"
    LOWER = "lower"
    UNKNOWN = "unknown"


# The rows of a table of copies (`caramel_copy` column) that are not one copy's figure: the
# aggregate a benchmark declares (its result) and the spread over the copies (never judged as a
# benchmark): the pooled lines' sd and sem, and the bounds of the aggregate's confidence interval.
COPY_AGGREGATES = ("sum", "mean")
COPY_DEVIATIONS = ("sd", "sem")
COPY_INTERVAL = ("ci_low", "ci_high")
COPY_SPREADS = (*COPY_DEVIATIONS, *COPY_INTERVAL)
