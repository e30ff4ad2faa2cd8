"""Derived patterns: `mode="python"` (or shell, perl, text) patterns computed from other patterns'
statistics and from parameters, e.g. `(1.0/$elp_pat_avg)*$global_batch_size*$sequence_length`.

As in JUBE: the substitution values are the workpackage's parameters, the analysed values as text
(`str(value)`), the built-in `$jube_pat_*` and the derived patterns already computed; derived
patterns are computed in dependency order. An expression that cannot be computed gives the
pattern's `default`, else nan (int, float) or "" (string), without stopping the analysis. When all
its inputs were there and it still failed (a ZeroDivisionError, a syntax error), a `Problem` names
the expression and the workpackage so the user learns why the cell is nan.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from caramel.errors import CaramelError
from caramel.stages.analyse.patterns import BUILTIN_PATTERNS, kind
from caramel.stages.expand.params import to_type
from caramel.stages.expand.substitute import has_placeholder, references, substitute
from caramel.stages.expand.values import run_script
from caramel.stages.spec.model import Pattern

MAX_PASSES = 5
SCRIPTS = ("python", "shell", "perl")


@dataclass
class Problem:
    pattern: Pattern
    expression: str
    wp_id: int
    message: str


def _fallback(pattern: Pattern) -> str:
    if pattern.default is not None:
        return pattern.default
    return "nan" if kind(pattern) in ("int", "float") else ""


def _run(pattern: Pattern, code: str) -> str:
    return run_script(code, pattern.mode, f"pattern '{pattern.name}'", pattern.where)


class _Lookup:
    """The substitution values of one result without building a dict per workpackage; JUBE's
    priority: built-ins > analysed values (as text) > parameters > derived patterns computed."""

    __slots__ = ("params", "values", "done")

    def __init__(
        self, params: dict[str, str], values: dict[str, object], done: dict[str, str]
    ) -> None:
        self.params = params
        self.values = values
        self.done = done

    def get(self, name: str, default: str | None = None) -> str | None:
        found = BUILTIN_PATTERNS.get(name)
        if found is not None:
            return found
        value = self.values.get(name)
        if value is not None:
            return str(value)
        found = self.params.get(name)
        if found is not None:
            return found
        return self.done.get(name, default)


_NOTHING: dict[str, str] = {}


def evaluate_derived(
    patterns: list[Pattern],
    params: dict[str, str],
    values: dict[str, object],
    wp_id: int,
    problems: list[Problem] | None = None,
) -> dict[str, object]:
    """The typed values of the derived `patterns` for one result (root workpackage `wp_id`)."""
    if not patterns:
        return {}
    order, waits_for = _plan(tuple((p.name, p.regex, p.mode) for p in patterns))
    done: dict[str, str] = {}
    derivation = _Derivation(
        {p.name: p for p in patterns},
        order,
        waits_for,
        _Lookup(params, values, done),
        done,
        wp_id,
        problems,
    )
    derivation.run_passes()
    derivation.finish()
    return {p.name: to_type(done[p.name], kind(p)) for p in patterns}


@dataclass
class _Derivation:
    """One result's derived patterns being computed, as JUBE's passes compute them: in dependency
    order, each once the script patterns it waits for are done; `done` is what `consts` reads."""

    by_name: dict[str, Pattern]
    order: list[str]
    waits_for: dict[str, frozenset[str]]
    consts: _Lookup
    done: dict[str, str]
    wp_id: int
    problems: list[Problem] | None

    def complete(self) -> bool:
        return len(self.done) == len(self.order)

    def run_passes(self) -> None:
        for _ in range(MAX_PASSES):
            if not self._round() or self.complete():
                return

    def _round(self) -> bool:
        """A pass, then, where nothing moved, a forced one (evaluated even with `$` left: a
        shell's own variables); whether the last pass computed anything."""
        for force in (False, True):
            progress = self._pass(force)
            if progress or self.complete():
                return progress
        return False

    def _pass(self, force: bool) -> bool:
        progress = False
        for name in self.order:
            if self._waiting(name):
                continue
            result = self._value(self.by_name[name], force)
            if result is not None:
                self.done[name] = result
                progress = True
        return progress

    def _waiting(self, name: str) -> bool:
        """Done, or waits for another derived pattern."""
        waits = self.waits_for[name]
        return name in self.done or (bool(waits) and not waits <= self.done.keys())

    def _value(self, p: Pattern, force: bool) -> str | None:
        """One derived pattern's text in this pass; None when it must wait (a `$` left and not
        forced, or a forced evaluation that failed without a default: the final pass decides)."""
        text = substitute(p.regex, self.consts)
        if p.mode not in SCRIPTS:
            return text
        unresolved = has_placeholder(text)
        if unresolved and not force:
            return None
        code = substitute(text, _NOTHING, final=True)
        try:
            return _run(p, code)
        except CaramelError as exc:
            return self._failed(p, code, exc, unresolved)

    def _failed(self, p: Pattern, code: str, exc: CaramelError, unresolved: bool) -> str | None:
        """A failed evaluation: JUBE ignores a forced one (the final pass decides, None) unless
        the pattern has a default; one with all its inputs is a Problem and its fallback."""
        if unresolved and p.default is None:
            return None
        if not unresolved and self.problems is not None:
            self.problems.append(Problem(p, code, self.wp_id, _reason(exc)))
        return _fallback(p)

    def finish(self) -> None:
        """JUBE's final pass: what is left gets its fallback on failure."""
        for name, p in self.by_name.items():
            if name not in self.done:
                self.done[name] = _last_try(p, self.consts)


def _last_try(p: Pattern, consts: _Lookup) -> str:
    code = substitute(substitute(p.regex, consts), _NOTHING, final=True)
    try:
        return _run(p, code) if p.mode in SCRIPTS else code
    except CaramelError:
        return _fallback(p)


@lru_cache(maxsize=256)
def _plan(
    patterns: tuple[tuple[str, str, str], ...],
) -> tuple[list[str], dict[str, frozenset[str]]]:
    """Derived patterns in dependency order (cycles left in file order), and for each the other
    script patterns it must wait for."""
    names = {name for name, _, _ in patterns}
    scripts = {name for name, _, mode in patterns if mode in SCRIPTS}
    deps = {name: _references(name, text, names) for name, text, _ in patterns}
    waits_for = {name: frozenset(d & scripts) for name, d in deps.items()}
    return _dependency_order(deps), waits_for


def _references(name: str, text: str, names: set[str]) -> set[str]:
    """The other derived patterns a pattern's text names."""
    return {r for r in references(text) if r in names and r != name}


def _dependency_order(deps: dict[str, set[str]]) -> list[str]:
    """The names, each after those it depends on; a cycle's names left in their order, last."""
    deps = dict(deps)
    order: list[str] = []
    placed: set[str] = set()
    while deps:
        ready = [n for n, d in deps.items() if d <= placed]
        if not ready:
            return order + list(deps)
        for n in ready:
            del deps[n]
        order += ready
        placed.update(ready)
    return order


def _reason(exc: CaramelError) -> str:
    message = exc.message
    marker = "failed: "
    return message.split(marker, 1)[1] if marker in message else message
