"""A figure's unit and which way it is better: read from a declaration, the unit, or the name.

The order (docs/history.md): an explicit `direction="lower|higher"` on the pattern wins; else the
unit decides (times, energies, powers and sizes are better lower; anything per second, per joule or
per watt, and FLOP/s, better higher); else the name (`elapsed`, `t_avg`, `Time/iteration(s)` are
times, `images_sec`, `tokens_per_second`, `Tokens/J` rates); where none decides, the direction is
UNKNOWN and a verdict says it cannot judge instead of guessing. A percentage decides nothing: a
utilisation is better higher, an overhead or an error rate lower.

The grammar of a unit (`unit_problem`): at most MAX_UNIT_CHARS characters in at most MAX_UNIT_WORDS
words of letters, digits and `/ % ( ) _ - . * ^ °`; anything else (control characters, markup,
quotes, a comma that would split a CSV row) cannot be read. Nothing here raises on any text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Protocol

from caramel.vocabulary import STATISTICS, Direction

MAX_UNIT_CHARS = 40
MAX_UNIT_WORDS = 4

TIME = frozenset(
    {
        "s",
        "sec",
        "secs",
        "second",
        "seconds",
        "ms",
        "msec",
        "msecs",
        "millisecond",
        "milliseconds",
        "us",
        "µs",
        "μs",
        "usec",
        "usecs",
        "microsecond",
        "microseconds",
        "ns",
        "nsec",
        "nanosecond",
        "nanoseconds",
        "min",
        "mins",
        "minute",
        "minutes",
        "h",
        "hr",
        "hrs",
        "hour",
        "hours",
        "day",
        "days",
    }
)
ENERGY = frozenset({"j", "kj", "mj", "gj", "joule", "joules", "wh", "kwh", "mwh", "gwh"})
POWER = frozenset({"w", "kw", "mw", "watt", "watts"})
MEMORY = frozenset(
    {
        "b",
        "kb",
        "mb",
        "gb",
        "tb",
        "pb",
        "kib",
        "mib",
        "gib",
        "tib",
        "pib",
        "byte",
        "bytes",
        "kbyte",
        "mbyte",
        "gbyte",
        "kbytes",
        "mbytes",
        "gbytes",
    }
)
LOWER_UNITS = TIME | ENERGY | POWER | MEMORY
# one word that is a rate by itself (frames, queries, transactions, requests, I/O operations per
# second)
RATE_WORDS = frozenset({"fps", "qps", "tps", "rps", "iops", "hz", "khz", "mhz", "ghz"})
_FLOPS = re.compile(r"^[kmgtpe]?(flops|flop/s)$")  # FLOP/s; a bare FLOP count says nothing
_PER_TIME = re.compile(r"^([a-zµμ]+)\^-1$")  # s^-1

# Name words: which way a figure is better when neither a declaration nor a unit says.
LOWER_WORDS = frozenset(
    {
        "t",
        "time",
        "times",
        "elapsed",
        "latency",
        "runtime",
        "duration",
        "walltime",
        "wall",
        "energy",
        "power",
        "memory",
        "mem",
        "loss",
        "ttft",
        "tpot",
        "itl",
        "delay",
        "overhead",
    }
)
HIGHER_WORDS = frozenset(
    {
        "throughput",
        "bandwidth",
        "speedup",
        "mfu",
        "flops",
        "tflops",
        "gflops",
        "mflops",
        "pflops",
        "fps",
        "qps",
        "tps",
        "iops",
    }
)
# things counted per unit of time in a rate's name: `images_sec`, `tokens_s` (not `compile_sec`, a
# time)
COUNT_WORDS = frozenset(
    {
        "images",
        "image",
        "imgs",
        "img",
        "tokens",
        "token",
        "tok",
        "toks",
        "samples",
        "sample",
        "examples",
        "items",
        "sequences",
        "seqs",
        "seq",
        "steps",
        "iterations",
        "iters",
        "iter",
        "it",
        "frames",
        "queries",
        "requests",
        "reqs",
        "ops",
        "batches",
        "words",
        "records",
        "events",
        "updates",
        "sentences",
        "pixels",
        "bytes",
        "messages",
        "msgs",
        "transactions",
    }
)
# JUBE's statistic suffixes, stripped before a name is read (`t_avg` is `t`); a count says nothing
NAME_SUFFIXES = tuple("_" + s for s in STATISTICS)


def unit_problem(text: str) -> str | None:
    """Why `text` cannot be read as a unit (None: it can; an empty text is no unit, and fine)."""
    if not isinstance(text, str):
        return "not a text"
    unit = text.strip()
    if not unit:
        return None
    if len(unit) > MAX_UNIT_CHARS:
        return f"longer than {MAX_UNIT_CHARS} characters"
    return _character_problem(unit) or _word_count_problem(unit)


def _character_problem(unit: str) -> str | None:
    """The first character a unit may not hold, said."""
    bad = next((c for c in unit if not (c.isalnum() or c in "/%()_-.*^° ")), None)
    if bad is None:
        return None
    return f"it holds {bad!r}; a unit is letters, digits and / % ( ) _ - . * ^"


def _word_count_problem(unit: str) -> str | None:
    return f"more than {MAX_UNIT_WORDS} words" if len(unit.split()) > MAX_UNIT_WORDS else None


def readable_unit(text: str) -> str:
    """`text` stripped when it can be read as a unit, else '' (no unit)."""
    return text.strip() if unit_problem(text) is None else ""


def _words(text: str) -> list[str]:
    """The words of a unit or name part, lower case: _, -, ., spaces and brackets split."""
    return [w for w in re.split(r"[^0-9a-zµμ°%^]+", text.lower()) if w]


def _ratio(text: str, camel: bool = False) -> list[list[str]]:
    """The parts of a ratio (`tokens/s/GPU`, `samples per second`, `images_per_joule`), each as
    words; `camel`: a name's camelCase splits words too (`AvgPower`; a unit's `kWh` stays one)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text) if camel else text
    slashed = re.sub(
        r"(?i)(^|[\s_\-.])per(?=[\s_\-.]|$)", "/", spaced
    )  # `per` between words is a `/`
    slashed = re.sub(r"(?i)per(sec|second)$", r"/\1", slashed)  # imagespersec
    return [_words(part) for part in slashed.split("/")]


def unit_direction(unit: str) -> Direction:
    """Which way a figure of this unit is better; UNKNOWN when the unit does not say (or is
    unreadable)."""
    if unit_problem(unit) is not None or not unit.strip():
        return Direction.UNKNOWN
    text = unit.strip()
    if _is_rate(text.lower().replace(" ", "")):
        return Direction.HIGHER
    return _unit_ratio_direction(_ratio(text))


def _unit_ratio_direction(parts: list[list[str]]) -> Direction:
    """Which way a unit's ratio parts say a figure is better."""
    head = parts[0]
    if _any_time_energy_power(_flat(parts[1:])) or _any_rate(head):
        return Direction.HIGHER  # per second, per joule, per watt; a rate
    if head and head[0] in LOWER_UNITS:
        return Direction.LOWER  # a time, energy, power or size (per item: still a time)
    return Direction.UNKNOWN


def _is_rate(lowered: str) -> bool:
    """FLOP/s, a rate word, or anything per time (`1/s`, `hz`), as one lower-case word."""
    per_time = _PER_TIME.match(lowered)
    return bool(
        _FLOPS.match(lowered) or lowered in RATE_WORDS or (per_time and per_time.group(1) in TIME)
    )


def _flat(parts: list[list[str]]) -> list[str]:
    """The words of ratio parts, in order."""
    return [w for part in parts for w in part]


def _any_time_energy_power(words: list[str]) -> bool:
    return any(w in TIME or w in ENERGY or w in POWER for w in words)


def _any_rate(words: list[str]) -> bool:
    return any(_FLOPS.match(w) or w in RATE_WORDS for w in words)


def _any_lower(words: list[str]) -> bool:
    return any(w in LOWER_WORDS or w in LOWER_UNITS for w in words)


def _any_higher(words: list[str]) -> bool:
    return any(w in HIGHER_WORDS or _FLOPS.match(w) for w in words)


def strip_statistic(name: str) -> str:
    """`t_avg` -> `t`: JUBE's statistic suffixes say nothing of which way the figure is better."""
    for suffix in NAME_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


_BRACKETED = re.compile(r"[(\[]([^()\[\]]+)[)\]]\s*$")


def unit_in_name(name: str) -> str:
    """The unit a column's title states at its end (`Time/iteration(s)`, `Energy[Wh]`), else ''."""
    found = _BRACKETED.search(name)
    return readable_unit(found.group(1)) if found else ""


def name_direction(name: str) -> Direction:
    """Which way a figure is better by its name alone; UNKNOWN when the name does not say."""
    base = strip_statistic(name.strip())
    stated = unit_direction(unit_in_name(base))
    if stated is not Direction.UNKNOWN:
        return stated
    base = _BRACKETED.sub("", base) or base
    parts = _ratio(base, camel=True)
    # a ratio: `Tokens/second`, `time_per_step`, `Images/J`
    by_ratio = _ratio_direction(parts) if len(parts) > 1 else Direction.UNKNOWN
    if by_ratio is not Direction.UNKNOWN:
        return by_ratio
    return _words_direction(_flat(parts))


def _words_direction(words: list[str]) -> Direction:
    """Which way a figure is better by the words of its name."""
    if _is_count_per_time(words) or _any_higher(words):
        return Direction.HIGHER
    if _says_lower(words):
        return Direction.LOWER
    return Direction.UNKNOWN


def _is_count_per_time(words: list[str]) -> bool:
    """images_sec, tokens_s: a count per second."""
    return len(words) > 1 and words[-1] in TIME and any(w in COUNT_WORDS for w in words[:-1])


def _says_lower(words: list[str]) -> bool:
    """A word that is better lower (`latency`), or a name that ends in such a unit (compile_ms,
    memory_gb, energy_j)."""
    return any(w in LOWER_WORDS for w in words) or (bool(words) and words[-1] in LOWER_UNITS)


def _ratio_direction(parts: list[list[str]]) -> Direction:
    head, below = parts[0], _flat(parts[1:])
    if _any_time_energy_power(below):
        return Direction.HIGHER
    if _any_lower(head):
        return Direction.LOWER
    if _any_higher(head):
        return Direction.HIGHER
    return Direction.UNKNOWN


def as_direction(declared: str | None) -> Direction:
    """A declared direction (`lower`, `higher`, also a stored `unknown`); UNKNOWN for anything
    else."""
    try:
        return Direction(str(declared or "").strip().lower())
    except ValueError:
        return Direction.UNKNOWN


@functools.lru_cache(maxsize=4096)
def direction(name: str, unit: str = "", declared: str = "") -> Direction:
    """Which way a figure is better: the declaration, else the unit, else the name, else UNKNOWN."""
    said = as_direction(declared)
    if said is not Direction.UNKNOWN:
        return said
    by_unit = unit_direction(unit)
    if by_unit is not Direction.UNKNOWN:
        return by_unit
    return name_direction(name)


class UnitSource(Protocol):
    """What `unreadable_units` reads of a figure (analyse.performance.Figure)."""

    metric: str  # the unit text as the log wrote it (emptied when it cannot be read)
    source: str  # file:line


def unreadable_units(figures: Sequence[UnitSource]) -> list[str]:
    """The `performance:` figures (analyse.performance.Figure: `.metric` their unit text, `.source`
    the file:line they came from) whose unit cannot be read lose it, so their direction is unknown
    rather than guessed from markup; one note each, naming the file and line and what was
    expected."""
    notes = []
    for figure in figures:
        problem = unit_problem(figure.metric)
        if problem is not None:
            notes.append(
                f"{figure.source}: the unit {figure.metric[: MAX_UNIT_CHARS + 10]!r} "
                "cannot be read "
                f"({problem}); the figure is kept without a unit, so no verdict can judge it; "
                "expected 'performance: NUMBER UNIT' with a unit such as ms or samples/s"
            )
            figure.metric = ""
    return notes


def is_time_unit(unit: str) -> bool:
    """A unit of time (`s`, `ms`, `min`...), or a time per item (`s/iter`)."""
    parts = _ratio(unit.strip()) if unit_problem(unit) is None else []
    return bool(parts and parts[0] and parts[0][0] in TIME)
