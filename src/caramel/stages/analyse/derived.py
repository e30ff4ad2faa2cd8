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
    by_name = {p.name: p for p in patterns}
    done: dict[str, str] = {}
    consts = _Lookup(params, values, done)
    for _ in range(MAX_PASSES):
        progress = False
        for force in (False, True):  # forced: evaluate even with $ left (a shell's own variables)
            for name in order:
                if name in done or (waits_for[name] and not waits_for[name] <= done.keys()):
                    continue  # done, or waits for another derived pattern
                result = _evaluate(by_name[name], consts, force, wp_id, problems)
                if result is not None:
                    done[name] = result
                    progress = True
            if progress or len(done) == len(order):
                break
        if not progress or len(done) == len(order):
            break
    for name, p in by_name.items():  # JUBE's final pass: what is left gets its fallback on failure
        if name in done:
            continue
        code = substitute(substitute(p.regex, consts), _NOTHING, final=True)
        try:
            done[name] = _run(p, code) if p.mode in SCRIPTS else code
        except CaramelError:
            done[name] = _fallback(p)
    return {p.name: to_type(done[p.name], kind(p)) for p in patterns}


def _evaluate(
    p: Pattern, consts: _Lookup, force: bool, wp_id: int, problems: list[Problem] | None
) -> str | None:
    """One derived pattern's text in this pass; None when it must wait (a `$` left and not
    forced, or a forced evaluation that failed without a default: the final pass decides)."""
    text = substitute(p.regex, consts)
    if p.mode not in SCRIPTS:
        return text
    unresolved = has_placeholder(text)
    if unresolved and not force:
        return None
    code = substitute(text, _NOTHING, final=True)
    try:
        return _run(p, code)
    except CaramelError as exc:
        if unresolved and p.default is None:
            return None  # JUBE ignores a failed forced evaluation; the final pass decides
        if not unresolved and problems is not None:
            problems.append(Problem(p, code, wp_id, _reason(exc)))
        return _fallback(p)


@lru_cache(maxsize=256)
def _plan(
    patterns: tuple[tuple[str, str, str], ...],
) -> tuple[list[str], dict[str, frozenset[str]]]:
    """Derived patterns in dependency order (cycles left in file order), and for each the other
    script patterns it must wait for."""
    names = {name for name, _, _ in patterns}
    scripts = {name for name, _, mode in patterns if mode in SCRIPTS}
    deps = {
        name: {r for r in references(text) if r in names and r != name}
        for name, text, _ in patterns
    }
    waits_for = {name: frozenset(d & scripts) for name, d in deps.items()}
    order: list[str] = []
    placed: set[str] = set()
    while deps:
        ready = [n for n, d in deps.items() if d <= placed]
        if not ready:
            order += list(deps)
            break
        for n in ready:
            del deps[n]
        order += ready
        placed.update(ready)
    return order, waits_for


def _reason(exc: CaramelError) -> str:
    message = exc.message
    marker = "failed: "
    return message.split(marker, 1)[1] if marker in message else message
