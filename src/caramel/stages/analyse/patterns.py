"""Patterns: JUBE's built-in regex pieces, patternset merging, substitution and compilation.

A pattern's text is substituted like a parameter (JUBE's `$` rules,
`caramel.stages.expand.substitute`): `$jube_pat_*` built-ins win over the workpackage's parameters,
which win over other patterns of the same set. Most patterns only use built-ins, so their regex is
compiled once for the whole run; patterns naming parameters are compiled once per distinct
combination of those parameter values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from caramel.errors import Location
from caramel.stages.analyse.inputs import AnalyseError
from caramel.stages.expand.substitute import references, substitute
from caramel.stages.spec.model import Benchmark, Pattern, Patternset

# defined in spec (the engine's progress reads logs too); its readers here import it from here
from caramel.stages.spec.regexes import BUILTIN_PATTERNS as BUILTIN_PATTERNS  # noqa: PLC0414

if TYPE_CHECKING:
    import regex


def is_derived(pattern: Pattern) -> bool:
    """mode="pattern" scans files; every other mode (python, shell, perl, text) is computed."""
    return pattern.mode != "pattern"


def kind(pattern: Pattern) -> str:
    """int, float or string (`str` is JUBE's alias of string)."""
    return pattern.type if pattern.type in ("int", "float") else "string"


def combine(
    bench: Benchmark, names: list[str], into: dict[str, Pattern], owner: str, where: Location
) -> None:
    """Add the patterns of the sets `names` to `into` (name -> pattern), as JUBE combines them:
    a name defined twice must have the same text, otherwise the sets cannot be used together."""
    for set_name in names:
        for pattern in _patternset(bench, set_name, owner, where).patterns:
            known = into.get(pattern.name)
            if known is not None and _differ(known, pattern):
                raise AnalyseError(
                    f"{owner} cannot use patternset '{set_name}': pattern '{pattern.name}' is "
                    f"already defined differently at {known.where}",
                    pattern.where,
                    hint="rename one of the patterns",
                )
            into[pattern.name] = pattern


def _patternset(bench: Benchmark, name: str, owner: str, where: Location) -> Patternset:
    pset = bench.patternsets.get(name)
    if pset is None:
        from caramel.errors import did_you_mean

        raise AnalyseError(
            f"{owner} uses patternset '{name}', which is not defined",
            where,
            hint=did_you_mean(name, bench.patternsets)
            or "patternsets: " + (", ".join(bench.patternsets) or "none"),
        )
    return pset


def _differ(known: Pattern, pattern: Pattern) -> bool:
    """Two patterns of one name with different texts (the same pattern twice is fine)."""
    return known is not pattern and (known.regex, known.mode) != (pattern.regex, pattern.mode)


@dataclass
class Probe:
    """A compiled pattern ready to scan with."""

    name: str
    regex: regex.Pattern[str]
    kind: str  # int | float | string


class Compiler:
    """Substitutes and compiles the scanning patterns of one patternset for each workpackage."""

    def __init__(self, patterns: list[Pattern]) -> None:
        self.patterns = [p for p in patterns if not is_derived(p)]
        self.names = {p.name for p in self.patterns}
        refs: set[str] = set()
        for p in self.patterns:
            refs |= references(p.regex)
        # Parameter names a regex may depend on (pattern names too: a parameter of the same name
        # wins).
        self.param_refs = tuple(sorted(refs - set(BUILTIN_PATTERNS)))
        self._cache: dict[tuple[str | None, ...], list[Probe]] = {}

    def probes(self, params: dict[str, str]) -> list[Probe]:
        key = tuple(params.get(name) for name in self.param_refs)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._compile(params)
        return found

    def _compile(self, params: dict[str, str]) -> list[Probe]:
        raw = {p.name: p.regex for p in self.patterns}
        values = {n: params[n] for n in self.param_refs if n in params}
        values.update(BUILTIN_PATTERNS)
        resolved: dict[str, str] = {}

        def resolve(name: str, stack: tuple[str, ...]) -> str:
            if name in resolved:
                return resolved[name]
            text = raw[name]
            consts = dict(values)
            for ref in references(text):
                if ref in raw and ref not in values and ref not in stack:
                    consts[ref] = resolve(ref, stack + (name,))
            resolved[name] = substitute(text, consts)
            return resolved[name]

        out = []
        for p in self.patterns:
            text = substitute(resolve(p.name, ()), {}, final=True)
            out.append(
                Probe(
                    p.name, compile_pattern(text, p.dotall, f"pattern '{p.name}'", p.where), kind(p)
                )
            )
        return out


def compile_pattern(text: str, dotall: bool, what: str, where: Location) -> regex.Pattern[str]:
    """`text` compiled for scanning by the regex module (MULTILINE, DOTALL when asked). It is first
    compiled by `re`, as JUBE compiles it, so that a pattern JUBE refuses is refused with `re`'s own
    words; one `re` takes and regex does not is refused with regex's."""
    # `re`'s syntax, and a time bound on each match (analyse.scan); imported here, where a pattern
    # is first compiled: a `bench result` that finds nothing changed scans nothing
    import regex

    flags = re.MULTILINE | (re.DOTALL if dotall else 0)
    try:
        re.compile(text, flags)
        return regex.compile(text, flags)
    except (re.error, regex.error) as exc:
        raise AnalyseError(
            f"{what} is not a valid regular expression: {exc}: {text!r}",
            where,
            hint="fix the regex; $name placeholders are substituted first",
        ) from None
