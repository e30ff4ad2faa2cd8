"""A unit's dimension and scale, read by pint: figures printed in `s` and `ms`, `MB/s` and `GB/s`,
`J` and `Wh`, `TFLOP/s` and `GFLOPS` meet in one unit before they are compared.

pint (the units library of the scientific Python stack: SI prefixes, binary prefixes, derived units
and their dimensions, maintained since 2012) reads a unit; caramel only rewrites the words pint
does not know in the way ML benchmarks print them (docs/history.md, "Converting units"):

- `per`, `_per_`, `-per-` and `/` divide: `samples_per_second` is `samples/second`;
- a count word (`tokens`, `tok`, `samples`, `images`, `img`, `steps`, `it`, `gpu` ...) is a count of
  its own kind: `tokens/s`, `tok/s` and `tokens/sec` are one unit, `samples/s` another dimension;
- `FLOPS`, `GFLOPS`, `gflop/s` are FLOP per second with their prefix (an `m` there is mega);
- a `b` or `B` after a decimal or binary prefix is a byte (`mb`, `GB`, `KiB`; `Gbit` is bits);
- time words in any case and spelling (`sec`, `msec`, `usec`, `µs`, `hrs`);
- `fps`, `qps`, `rps`, `iops` are frames, queries, requests, operations per second; `tps` (tokens or
  transactions?) and anything pint does not know stay themselves.

A unit that is neither (`x`, `tps`, `req_ok`) is unknown: it has no dimension and compares only with
the identical text, as ReFrame groups performance figures by their unit text
(reframe/frontend/reporting/utility.py, DEFAULT_GROUP_BY). An empty unit says nothing: it meets any
unit as a bare number (a history of an older caramel stored no units). Nothing here raises on any
text; each distinct text is read once (cached); pint is loaded only when two different texts meet.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from caramel.errors import CaramelError
from caramel.stages.spec.units import unit_problem

if TYPE_CHECKING:  # pint takes a second to import and load: only when two different unit texts meet
    import pint

# count words: each line one kind of thing counted (its pint unit, then the words that name it)
COUNTS: dict[str, tuple[str, ...]] = {
    "token": ("token", "tokens", "tok", "toks"),
    "sample": ("sample", "samples"),
    "example": ("example", "examples"),
    "image": ("image", "images", "img", "imgs"),
    "item": ("item", "items"),
    "sequence": ("sequence", "sequences", "seq", "seqs"),
    "step": ("step", "steps"),
    "iteration": ("iteration", "iterations", "iter", "iters", "it"),
    "epoch": ("epoch", "epochs"),
    "batch": ("batch", "batches"),
    "frame": ("frame", "frames"),
    "query": ("query", "queries"),
    "request": ("request", "requests", "req", "reqs"),
    "operation": ("op", "ops", "operation", "operations"),
    "word": ("word", "words"),
    "sentence": ("sentence", "sentences"),
    "record": ("record", "records"),
    "event": ("event", "events"),
    "update": ("update", "updates"),
    "message": ("message", "messages", "msg", "msgs"),
    "transaction": ("transaction", "transactions"),
    "gpu": ("gpu", "gpus"),
    "node": ("node", "nodes"),
    "device": ("device", "devices"),
}
_COUNT_OF = {alias: unit for unit, aliases in COUNTS.items() for alias in aliases}
# one word that is a rate by itself; `tps` (tokens or transactions per second?) is not among them
RATE_WORDS = {
    "fps": "(frame/s)",
    "qps": "(query/s)",
    "rps": "(request/s)",
    "iops": "(operation/s)",
    "hz": "Hz",
    "khz": "kHz",
    "mhz": "MHz",
    "ghz": "GHz",
}
TIME_WORDS = {
    "s": ("s", "sec", "secs", "second", "seconds"),
    "ms": ("ms", "msec", "msecs", "millisecond", "milliseconds"),
    "us": ("us", "µs", "μs", "usec", "usecs", "microsecond", "microseconds"),
    "ns": ("ns", "nsec", "nsecs", "nanosecond", "nanoseconds"),
    "min": ("min", "mins", "minute", "minutes"),
    "hour": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("day", "days"),
}
_TIME_OF = {alias: unit for unit, aliases in TIME_WORDS.items() for alias in aliases}
AMBIGUOUS = frozenset({"tps"})  # tokens or transactions per second: only equal to itself
ENERGY_WORDS = {"j": "J", "kj": "kJ", "wh": "Wh", "kwh": "kWh", "w": "W", "kw": "kW"}
_PREFIX = {
    "k": "k",
    "m": "M",
    "g": "G",
    "t": "T",
    "p": "P",
    "e": "E",
}  # as a byte's or FLOP's prefix
_BYTES = re.compile(r"(?i)^(?:([kmgtpe])(i?))?(?:b|bytes?)$")
_FLOPS = re.compile(r"(?i)^([kmgtpe]?)flop(s?)$")
_EXPONENT = re.compile(r"(\^|\*\*)\(?-?\d\)?")  # s^-1, m**2: the only digits pint is given
_PER = re.compile(r"(?i)(^|[\s_\-.])per(?=[\s_\-.]|$)|(?i:per)(?=sec$|second$)")
# a canonical unit per dimension: these, or one of these per second; else pint's base units
PREFERRED = ("s", "J", "W", "B", "FLOP", "%")


class UnitMismatch(CaramelError):
    """Two figures of one name whose units are of different dimensions (or unknown, different)."""

    def __init__(self, have: str, want: str) -> None:
        super().__init__(
            f"'{have}' ({describe(have)}) cannot be converted to '{want}' ({describe(want)})"
        )
        self.have, self.want = have, want


@dataclass(frozen=True)
class ParsedUnit:
    text: str  # as printed, stripped
    dimension: str  # pint's dimensionality (`[time]`, `[token] / [time]`); "" for an unknown unit
    scale: float  # a figure in `text` times this is the figure in `canonical`
    canonical: str  # the dimension's canonical unit (`s`, `token / s`); an unknown unit: its text

    @property
    def known(self) -> bool:
        return bool(self.dimension)


def describe(text: str) -> str:
    """A unit's dimension in words for an error: `[time]`, or why it has none."""
    parsed = parse_unit(text)
    if parsed.known:
        return parsed.dimension
    return "no unit" if not parsed.text else "a unit pint does not know: compared only with itself"


def conversion(have: str, want: str) -> float:
    """The factor that takes a figure printed in `have` into `want`: the one conversion every
    comparison calls (compare, targets, the dashboard, predict). 1.0 for one text, or when either
    side has no unit; UnitMismatch across dimensions or between two different unknown units."""
    have, want = have.strip(), want.strip()
    if have == want or not have or not want:
        return 1.0
    a, b = parse_unit(have), parse_unit(want)
    if not a.known or a.dimension != b.dimension:
        raise UnitMismatch(have, want)
    return a.scale / b.scale


def same_quantity(have: str, want: str) -> bool:
    """Whether figures in `have` and `want` can be compared (conversion does not refuse)."""
    try:
        conversion(have, want)
    except UnitMismatch:
        return False
    return True


@functools.lru_cache(maxsize=4096)
def parse_unit(text: str) -> ParsedUnit:
    """`text` read as a unit: its dimension and the scale to its canonical unit; never raises."""
    unit = text.strip() if isinstance(text, str) else ""
    read = _read_by_pint(unit)
    if read is None:
        return ParsedUnit(unit, "", 1.0, unit)
    canonical, scale, dimension = read
    return ParsedUnit(unit, dimension, scale, str(format(canonical, "~")).replace(" ", "") or unit)


def _read_by_pint(unit: str) -> tuple[Any, float, str] | None:
    """(canonical unit, scale to it, dimension) of a unit pint reads after caramel's rules; None:
    an unknown unit."""
    expression = pint_expression(unit)
    if not expression:
        return None
    try:
        read = _pint_scale(expression)
    except Exception:  # noqa: BLE001 - pint raises a dozen kinds on text it cannot read: unknown
        return None
    if read is None or not _usable_scale(read[1]):
        return None
    return read


def _pint_scale(expression: str) -> tuple[Any, float, str] | None:
    """(canonical unit, scale to it, dimension) of a pint expression; None for an offset (°C: no
    scale) or nothing at all."""
    registry = _registry()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        units = registry.parse_units(expression)
        quantity = registry.Quantity(1.0, units)
        if not quantity._is_multiplicative or quantity.dimensionless and not units:
            return None
        canonical = _canonical(registry, quantity)
        return canonical, float(quantity.to(canonical).magnitude), str(quantity.dimensionality)


def _usable_scale(scale: float) -> bool:
    return math.isfinite(scale) and scale > 0


def pint_expression(unit: str) -> str:
    """`unit` as pint reads it after caramel's rules (the module's doc); '' when no rule lets pint
    read it (an unreadable text, digits other than an exponent, a word such as `tps`)."""
    if not unit or unit_problem(unit) is not None:
        return ""
    text = re.sub(r"(?i)\s*\(per\s+([^()]+)\)$", r"/\1", unit)  # tokens/s (per GPU)
    text = _PER.sub(lambda m: (m.group(1) or "") + "/", text)
    text = re.sub(r"[\s_\-.]*/[\s_\-.]*", "/", text).strip(" _-./")
    if re.search(r"\d", _EXPONENT.sub("", re.sub(r"^1/", "", text))):
        return ""
    if any(word.lower() in AMBIGUOUS for word in re.findall(r"[^\W\d_]+", text)):
        return ""
    text = re.sub(r"[_\s]+", " ", text)
    return re.sub(r"[^\W\d_]+", _word, text)


def _word(match: re.Match[str]) -> str:
    word = match.group(0)
    return _table_word(word.lower()) or _flops_word(word) or _size_word(word) or word


# the words caramel names for pint, by kind
_WORD_TABLES: tuple[dict[str, str], ...] = (_COUNT_OF, _TIME_OF, RATE_WORDS, ENERGY_WORDS)


def _table_word(lowered: str) -> str | None:
    """What a count, time, rate or energy word is to pint."""
    table = next((table for table in _WORD_TABLES if lowered in table), None)
    return table[lowered] if table is not None else None


def _flops_word(word: str) -> str | None:
    """`TFLOPS` is (TFLOP/s), `GFLOP` is GFLOP."""
    flops = _FLOPS.match(word)
    if not flops:
        return None
    prefix = _PREFIX.get(flops.group(1).lower(), "")
    return f"({prefix}FLOP/s)" if flops.group(2) else f"{prefix}FLOP"


def _size_word(word: str) -> str | None:
    """`GB` is GB, `GiB` is GiB, `bytes` is B."""
    size = _BYTES.match(word)
    if not size:
        return None
    prefix = _PREFIX.get((size.group(1) or "").lower(), "")
    binary = size.group(2) and prefix
    return (prefix.upper() + "i" if binary else prefix) + "B"


def _canonical(
    registry: pint.UnitRegistry[float], quantity: pint.Quantity[float]
) -> Any:  # a pint unit (typed loosely by pint)
    """The preferred unit of the quantity's dimension, else one of them per second (not a ratio per
    second: 1/s stays 1/s), else its base units."""
    dimension = quantity.dimensionality
    preferred = [registry.parse_units(name) for name in PREFERRED]
    for unit in preferred:
        if registry.get_dimensionality(unit) == dimension:
            return unit
    for unit in preferred:
        if (
            registry.get_dimensionality(unit)
            and registry.get_dimensionality(unit / registry.second) == dimension
        ):
            return unit / registry.second
    return quantity.to_base_units().units


@functools.lru_cache(maxsize=1)
def _registry() -> pint.UnitRegistry[float]:
    """pint's registry with a byte a dimension of its own (pint counts bits as dimensionless, which
    would let MB/s meet Hz) and a dimension per count word and for FLOP. Loaded on first use (half
    a second): most commands never compare two different unit texts."""
    import importlib.resources

    import pint

    files = importlib.resources.files("pint")
    text = files.joinpath("default_en.txt").read_text(encoding="utf-8")
    constants = files.joinpath("constants_en.txt").read_text(encoding="utf-8")
    if "\nbit = []\n" not in text or "@import constants_en.txt" not in text:
        raise RuntimeError(
            "pint's definitions changed: no dimensionless bit to give a dimension"
        )  # all unknown
    text = text.replace("\nbit = []\n", "\nbit = [information]\n").replace(
        "@import constants_en.txt", constants
    )
    registry: pint.UnitRegistry[float] = pint.UnitRegistry(None, cache_folder=None)
    registry.load_definitions(text.splitlines())
    registry.load_definitions(["FLOP = [flop]", *(f"{unit} = [{unit}]" for unit in COUNTS)])
    registry._build_cache()
    return registry
