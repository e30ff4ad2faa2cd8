"""A targets file: references per system with tolerances (ReFrame's idea), and the Mila suite's sd
targets.

    systems:
      jureca:                                    # a system tag: the run's system or one of its tags
        gpt_smoke: {value: 1200, lower: -5%, upper: +20%, max_sd: 5%}
        matmul_users:                            # a benchmark or a model (gpt:size=117M) ...
          GFLOP/s: [2.5, -0.05, 0.2]             # ... with one reference per figure (name, unit,
          table/name) max_sd: 3%
      local:
        matmul_users: 2.0

A reference is a number (the value; the tolerance is `--threshold` in the bad direction, none in
the good one), a list `[value, lower, upper, unit]` (ReFrame's reference tuple: relative bounds,
-0.05 is 5 % below; the last ones may be left out) or a mapping with `value` and any of `lower`,
`upper` (relative: -0.05 or '-5%'), `min`, `max` (absolute, in the figure's unit), `threshold`
(percent in the bad direction, the old form) and `unit` (the unit of value, min and max, converted
into the figure's before judging: `{value: 13, unit: ms}`). Relative bounds are read as ReFrame
reads its thresholds (reframe/utility/sanity.py, reference_bounds): a negative reference turns them
round, a zero reference takes them as absolute bounds, an explicit null is no bound on that side,
and a bound of the wrong sign (or below -1 for a reference above zero, above 1 for one below) is
refused.
`max_sd` (percent) is the most a benchmark's sd% may be. The file without `systems:` is the old
flat form, valid for every system: `{"NAME": value}` or `{"NAME": {"value": v, "threshold": p}}`.

YAML or JSON, read with yaml's safe loader; every error names the file and the line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, TypeGuard

import yaml

from caramel.errors import Location, RunError, did_you_mean
from caramel.stages.spec import grammar
from caramel.stages.spec.quantities import conversion
from caramel.stages.spec.units import unit_problem
from caramel.stages.state import bounded

SYSTEMS_KEY = grammar.TARGETS_SYSTEMS_KEY
MAX_SD_KEY = "max_sd"
ANY_SYSTEM = ""  # the flat form's entries hold for every system
_REFERENCE_KEYS = grammar.names(grammar.TARGET_KEYS)  # the keys of one reference mapping


@dataclass(frozen=True)
class Reference:
    value: float
    # relative bounds, ReFrame's thresholds (-0.05: 5 % below); None: not given (the default applies
    # on the figure's bad side); -inf / +inf: given as null, no bound on that side (ReFrame's None)
    lower: float | None = None
    upper: float | None = None
    minimum: float | None = None  # absolute bounds, in the figure's unit
    maximum: float | None = None
    threshold: float | None = None  # percent in the bad direction (the flat form's `threshold`)
    unit: str = ""  # the unit of value, minimum and maximum; "": the figure's own

    def in_unit(self, unit: str) -> Reference:
        """The reference with its value and absolute bounds in `unit` (spec.quantities.conversion;
        UnitMismatch across dimensions); relative bounds and thresholds keep their meaning."""
        factor = conversion(self.unit, unit)
        if factor == 1.0:
            return self
        # a zero reference's relative bounds are absolute ones (bound_of): they are converted too
        scaled = (
            self
            if self.value != 0
            else replace(
                self,
                lower=None if self.lower is None else self.lower * factor,
                upper=None if self.upper is None else self.upper * factor,
            )
        )
        return replace(
            scaled,
            value=self.value * factor,
            unit=unit,
            minimum=None if self.minimum is None else self.minimum * factor,
            maximum=None if self.maximum is None else self.maximum * factor,
        )

    @property
    def explicit(self) -> bool:
        """Bounds given on both sides: the verdict is the interval, whichever way is better."""
        return (self.lower is not None or self.minimum is not None) and (
            self.upper is not None or self.maximum is not None
        )

    def bounds(self, direction: str, threshold: float) -> tuple[float, float]:
        """The interval a result must lie in. A side given neither relatively nor absolutely
        takes the default tolerance (`threshold` percent: ReFrame's lower bound -threshold/100 or
        upper bound +threshold/100) where the figure gets worse, open where it gets better."""
        default = (self.threshold if self.threshold is not None else threshold) / 100
        lower, upper = self.lower, self.upper
        if lower is None:
            lower = -default if direction == "higher" else -math.inf
        if upper is None:
            upper = default if direction == "lower" else math.inf
        low = self.minimum if self.minimum is not None else bound_of(self.value, lower)
        high = self.maximum if self.maximum is not None else bound_of(self.value, upper)
        return low, high


def bound_of(value: float, fraction: float) -> float:
    """The bound `fraction` away from `value` as ReFrame computes it (reframe/utility/sanity.py,
    reference_bounds): relative to the value's size, turned round below zero so that -0.05 stays
    below a negative value; a zero value takes the fraction as the bound itself."""
    if value == 0:
        return fraction
    return value * (1 + fraction * math.copysign(1.0, value))  # +-inf (no bound) stays +-inf


def threshold_problem(value: float, side: str, fraction: float) -> str | None:
    """Why ReFrame refuses `fraction` as the `side` ('lower'/'upper') bound of `value`, or None: a
    lower bound is at most 0 (at least -1 above zero), an upper one at least 0 (at most 1 below
    zero). ReFrame's reference_bounds raises ValueError('invalid low/high threshold value')."""
    problem = _SIDE_PROBLEMS.get(side)
    if math.isinf(fraction) or problem is None:
        return None
    return problem(value, fraction)


def _lower_problem(value: float, fraction: float) -> str | None:
    """A lower bound is at most 0, and at least -1 above zero."""
    if (-1 if value > 0 else -math.inf) <= fraction <= 0:
        return None
    return "in [-1, 0] for a reference above zero" if value > 0 else "at most 0"


def _upper_problem(value: float, fraction: float) -> str | None:
    """An upper bound is at least 0, and at most 1 below zero."""
    if 0 <= fraction <= (1 if value < 0 else math.inf):
        return None
    return "in [0, 1] for a reference below zero" if value < 0 else "at least 0"


_SIDE_PROBLEMS: dict[str, Callable[[float, float], str | None]] = {
    "lower": _lower_problem,
    "upper": _upper_problem,
}


@dataclass
class Entry:
    """The references of one benchmark (or model) on one system."""

    name: str
    system: str
    figures: dict[str, Reference] = field(default_factory=dict)  # "" : the benchmark's only figure
    max_sd: float | None = None  # percent
    where: Location = field(default_factory=lambda: Location(""))
    figure_lines: dict[str, Location] = field(default_factory=dict)


@dataclass
class Targets:
    path: str
    entries: list[Entry]
    systems: dict[str, Location]  # the systems the file names (none for the flat form)

    def for_system(self, names: list[str]) -> tuple[str | None, list[Entry]]:
        """The system of the file the run ran on (`names`: its system first, then its tags) and its
        entries; the flat form's entries hold for any system."""
        if not self.systems:
            return ANY_SYSTEM, self.entries
        chosen = next((n for n in names if n in self.systems), None)
        return chosen, [e for e in self.entries if e.system == chosen] if chosen else []


# yaml ships no types (setup.cfg: ignore_missing_imports): its SafeLoader is Any to the checker
class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """yaml's safe loader, keeping each mapping key's line (for errors that name it)."""


class _Lined(dict[Any, Any]):
    """A YAML mapping (keys and values of any YAML type) with the line of each key."""

    lines: dict[str, int]
    line: int


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _Lined:
    out = _Lined(loader.construct_mapping(node, deep=True))
    out.lines = {
        str(loader.construct_object(key)): key.start_mark.line + 1 for key, _value in node.value
    }
    out.line = node.start_mark.line + 1
    return out


def _line(mapping: _Lined, key: object) -> int:
    return mapping.lines.get(str(key), mapping.line)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
# YAML 1.1 reads `1e3` and `-5e-324` (no dot) as text; JSON and YAML 1.2 read them as numbers, and a
# targets file written by json.dump has them: a float of that form is a float here too
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def read_targets(path: str) -> Targets:
    """A targets file (YAML, or JSON), flat (`BENCHMARK: reference`) or per system (`systems:
    {SYSTEM: {BENCHMARK: reference}}`); a bad one is a RunError naming its line."""
    text = _read_text(path)
    if path.endswith(".json"):
        _check_json(path, text)
    doc = _parse_yaml(path, text)
    return _per_system(path, doc) if SYSTEMS_KEY in doc else _flat(path, doc)


def _flat(path: str, doc: _Lined) -> Targets:
    """The flat form: `BENCHMARK: reference`, for any system."""
    entries = [
        entry_from(path, name, spec, ANY_SYSTEM, _line(doc, name)) for name, spec in doc.items()
    ]
    return Targets(path, entries, {})


def _per_system(path: str, doc: _Lined) -> Targets:
    """The per-system form: `systems: {SYSTEM: {BENCHMARK: reference}}`, nothing beside it."""
    systems = doc[SYSTEMS_KEY]
    if len(doc) > 1 or not isinstance(systems, _Lined):
        beside = ", ".join(k for k in doc if k != SYSTEMS_KEY)
        raise RunError(
            "with `systems:`, a targets file holds only `systems: {SYSTEM: {BENCHMARK: ...}}`",
            Location(path, doc.line),
            hint=f"move {beside or 'it'} under a system",
        )
    entries = [entry for system in systems for entry in _system_entries(path, systems, system)]
    return Targets(path, entries, {str(s): Location(path, _line(systems, s)) for s in systems})


def _read_text(path: str) -> str:
    """The file's text, within state.bounded's bounds (a targets file is small: one over 64 MiB
    or 64 levels is refused, named)."""
    try:
        with open(path) as handle:
            text = handle.read(bounded.MAX_BYTES + 1)  # never more than the bound checks
    except (OSError, UnicodeDecodeError) as exc:
        raise RunError(
            f"{path}: cannot read the targets file: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    bounded.check(text, path)
    return text


def _check_json(path: str, text: str) -> None:
    """A .json file is JSON: its error named as JSON's, at its line."""
    try:
        json.loads(text)
    except ValueError as exc:
        raise RunError(
            f"not a JSON file of targets: {getattr(exc, 'msg', exc)}",
            Location(path, getattr(exc, "lineno", 0)),
            hint='expected {"systems": {"local": {"gemm": {"value": 1200, "lower": "-5%"}}}}',
        ) from None


def _parse_yaml(path: str, text: str) -> _Lined:
    """The file's mapping, each key with its line."""
    try:
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise RunError(
            f"not a YAML file of targets: {getattr(exc, 'problem', exc)}",
            Location(path, mark.line + 1 if mark else 0),
        ) from None
    if not isinstance(doc, _Lined):
        raise RunError(
            "a targets file is a mapping",
            Location(path, 1),
            hint="systems: {SYSTEM: {BENCHMARK: {value: N, lower: -5%, upper: +20%}}}",
        )
    return doc


def _system_entries(path: str, systems: _Lined, system: object) -> list[Entry]:
    """The entries of one system of the per-system form."""
    benchmarks = systems[system]
    if not isinstance(benchmarks, _Lined):
        raise RunError(
            f"system '{system}': expected a mapping of benchmarks to references",
            Location(path, _line(systems, system)),
        )
    return [
        entry_from(path, name, spec, str(system), _line(benchmarks, name))
        for name, spec in benchmarks.items()
    ]


def entry_from(path: str, name: str, spec: object, system: str, line: int) -> Entry:
    at = Location(path, line)
    entry = Entry(str(name), system, where=at)
    if isinstance(spec, _Lined) and "value" not in spec:  # one reference per figure
        for key, value in spec.items():
            where = Location(path, _line(spec, key))
            if key == MAX_SD_KEY:
                entry.max_sd = _percent(value, where, MAX_SD_KEY)
            else:
                entry.figures[str(key)] = _reference(value, where, f"'{name}' figure '{key}'")
                entry.figure_lines[str(key)] = where
        return entry
    entry.figures[""] = _reference(spec, at, f"'{name}'")
    if isinstance(spec, _Lined) and MAX_SD_KEY in spec:
        entry.max_sd = _percent(spec[MAX_SD_KEY], at, MAX_SD_KEY)
    return entry


_REFERENCE_HINT = (
    "expected a number, [value, lower, upper] (-0.05 or '-5%') "
    "or {value: N, lower: -5%, upper: +20%}"
)


def _reference(spec: object, where: Location, what: str) -> Reference:
    """A figure's reference: a number, a list as ReFrame's tuple, or a mapping."""
    if _is_number(spec):
        return Reference(float(spec))
    if isinstance(spec, list):
        return _listed_reference(spec, where, what)
    if isinstance(spec, dict):
        return _mapped_reference(spec, where, what)
    raise RunError(f"target {what}: {spec!r} is not a reference", where, hint=_REFERENCE_HINT)


def _listed_reference(spec: list[object], where: Location, what: str) -> Reference:
    """ReFrame's (ref, lower, upper, unit) tuple; the sides left out take the default."""
    value = spec[0] if spec else None
    if not 1 <= len(spec) <= 4 or not _is_number(value):
        raise RunError(
            f"target {what}: {spec!r} is not [value, lower, upper, unit]",
            where,
            hint=_REFERENCE_HINT,
        )
    given = dict(zip(("lower", "upper"), spec[1:3], strict=False))
    return Reference(
        float(value),
        *_relatives(given, float(value), where, what),
        unit=_unit(spec[3] if len(spec) == 4 else None, where, what),
    )


def _mapped_reference(spec: dict[Any, Any], where: Location, what: str) -> Reference:
    """`{value: N, lower: -5%, upper: +20%, min: .., max: .., threshold: .., unit: ..}`."""
    _check_reference_keys(spec, where, what)
    value = spec.get("value")
    if not _is_number(value):
        raise RunError(f"target {what}: 'value' must be a number", where, hint=_REFERENCE_HINT)
    absolute = {k: _absolute(spec[k], what, k, where) for k in ("min", "max") if k in spec}
    threshold = spec.get("threshold")
    return Reference(
        float(value),
        *_relatives(spec, float(value), where, what),
        absolute.get("min"),
        absolute.get("max"),
        None if threshold is None else _percent(threshold, where, "threshold"),
        _unit(spec.get("unit"), where, what),
    )


def _check_reference_keys(spec: dict[Any, Any], where: Location, what: str) -> None:
    """A reference's mapping holds only the keys a reference has (the first other one named)."""
    unknown = [k for k in spec if k not in _REFERENCE_KEYS]
    if unknown:
        raise RunError(
            f"target {what}: unknown key '{unknown[0]}'",
            where,
            hint=did_you_mean(str(unknown[0]), _REFERENCE_KEYS)
            or "keys: " + ", ".join(_REFERENCE_KEYS),
        )


def _absolute(value: object, what: str, key: str, where: Location) -> float:
    """An absolute bound (`min`, `max`): a number."""
    return float(value) if _is_number(value) else _bad(what, key, value, where)


def _relatives(
    spec: dict[Any, Any], value: float, where: Location, what: str
) -> tuple[float | None, float | None]:
    """The `lower` and `upper` relative bounds of a reference: None where not given, -inf / +inf
    where given as null (no bound, ReFrame's None); one ReFrame refuses for this value is an
    error."""
    out: list[float | None] = []
    for side, open_side in (("lower", -math.inf), ("upper", math.inf)):
        fraction = _relative(spec[side], where, what) if side in spec else None
        if side in spec and fraction is None:
            fraction = open_side
        problem = None if fraction is None else threshold_problem(value, side, fraction)
        if problem:
            raise RunError(
                f"target {what}: {side} bound {spec[side]!r} of {value:g} must be {problem}",
                where,
                hint="relative bounds as ReFrame's: lower -0.05 or '-5%' (below the "
                "value), upper 0.2 or '+20%'; null for no bound",
            )
        out.append(fraction)
    return out[0], out[1]


def _unit(value: object, where: Location, what: str) -> str:
    """A reference's unit: a text a unit can be (spec.units.unit_problem), '' when none is given."""
    if value is None:
        return ""
    problem = unit_problem(value) if isinstance(value, str) else "not a text"
    if isinstance(value, str) and problem is None:
        return value.strip()
    raise RunError(
        f"target {what}: unit {value!r} cannot be read ({problem})",
        where,
        hint="a unit such as ms, s, tokens/s, GB/s, TFLOP/s",
    )


def _relative(value: object, where: Location, what: str) -> float | None:
    """A relative bound: a fraction (-0.05) or a percentage ('-5%', '+20 %')."""
    if value is None:
        return None
    if _is_number(value):
        return float(value)
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            fraction = float(value.strip()[:-1]) / 100
        except ValueError:
            fraction = math.nan
        if math.isfinite(fraction):
            return fraction
    return _bad(what, "bound", value, where)


def _percent(value: object, where: Location, key: str) -> float:
    """A percentage: 5, '5%' or '5 %'."""
    text = value.strip().removesuffix("%") if isinstance(value, str) else value
    try:  # what float() takes of a YAML value (a !!binary's bytes too); anything else: no number
        number = float(text) if isinstance(text, (str, bytes, int, float)) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or isinstance(value, bool):
        raise RunError(f"{key} {value!r} is not a percentage", where, hint=f"expected {key}: 5%")
    return number


def _bad(what: str, key: str, value: object, where: Location) -> NoReturn:
    raise RunError(
        f"target {what}: {key} {value!r} is not a number or a percentage",
        where,
        hint="relative bounds: -0.05 or '-5%'; absolute: min: 950, max: 1300",
    )


def _is_number(value: object) -> TypeGuard[int | float]:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
