"""Sanity checks of a result row: the declared checks (spec/sanity.py) of every step along its chain
and of its analyser, evaluated on the files of its workpackages and on the row's values.

    reason = row_failure(inp, analyser, chain, groups, lookup)   # "" when every check holds

A log check reads the file (relative to the workpackage's work folder, never outside it once links
are resolved) with the scanner the patterns use; `expect` fails when the regex matches nowhere or
the file is missing, `reject` when it matches somewhere. An expression is evaluated by walking its
tree (`evaluate`): never `eval`, and only the grammar spec/sanity.py let through; a name without a
value, a nan result or an operation that cannot be done (a division by zero, a string in
arithmetic) fails the check with that reason.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from caramel.settings import current
from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
from caramel.stages.analyse.patterns import Probe
from caramel.stages.analyse.scan import scan_file
from caramel.stages.expand.substitute import substitute
from caramel.stages.spec.model import Sanity
from caramel.stages.spec.sanity import expression_names, plain_names

if TYPE_CHECKING:  # the analyser imports this module
    from caramel.stages.analyse.analyser import Group

MAX_POWER = 1024  # a larger integer exponent is taken as a float (no 9**9**9 of memory)
MISSING = object()

# operator's functions take operands of any type (a TypeError is caught where they are called)
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class NotEvaluable(ValueError):
    """An expression that cannot be evaluated for these values (the message says why)."""


def evaluate(tree: ast.AST, values: dict[str, object]) -> object:
    """The value of an expression tree of spec/sanity.py's grammar, names taken from `values`."""
    node = _NODES.get(type(tree))
    if node is None:  # spec/sanity.py refuses it earlier
        raise NotEvaluable(f"'{type(tree).__name__}' is not allowed")
    return node(tree, values)


def _expression(tree: ast.Expression, values: dict[str, object]) -> object:
    return evaluate(tree.body, values)


def _constant(tree: ast.Constant, _values: dict[str, object]) -> object:
    return tree.value


def _name(tree: ast.Name, values: dict[str, object]) -> object:
    if tree.id not in values:
        raise NotEvaluable(f"'{tree.id}' has no value")
    return values[tree.id]


def _bool_op(tree: ast.BoolOp, values: dict[str, object]) -> object:
    """`and`/`or` as Python: the first part that decides, else the last."""
    conjunction = isinstance(tree.op, ast.And)
    result: object = conjunction
    for part in tree.values:
        result = evaluate(part, values)
        if bool(result) != conjunction:
            return result
    return result


def _unary_op(tree: ast.UnaryOp, values: dict[str, object]) -> object:
    operand = evaluate(tree.operand, values)
    if isinstance(tree.op, ast.Not):
        return not operand
    number = _number(operand)
    return -number if isinstance(tree.op, ast.USub) else +number


def _bin_op(tree: ast.BinOp, values: dict[str, object]) -> object:
    base, power = _number(evaluate(tree.left, values)), _number(evaluate(tree.right, values))
    try:
        if isinstance(tree.op, ast.Pow):
            return _power(base, power)
        return _BINARY[type(tree.op)](base, power)
    except (ZeroDivisionError, OverflowError) as exc:
        raise NotEvaluable(str(exc)) from None


def _power(base: int | float, power: int | float) -> object:
    if isinstance(power, int) and abs(power) > MAX_POWER:
        return float(base) ** float(power)
    return base**power


def _compare(tree: ast.Compare, values: dict[str, object]) -> object:
    """A chain of comparisons (`0 < x <= 1`), each operand evaluated once; the first false ends
    it."""
    left = evaluate(tree.left, values)
    for op, right_tree in zip(tree.ops, tree.comparators, strict=True):
        right = evaluate(right_tree, values)
        if not _compared(op, left, right):
            return False
        left = right
    return True


def _compared(op: ast.cmpop, left: object, right: object) -> bool:
    try:
        return bool(_COMPARE[type(op)](left, right))
    except TypeError:
        raise NotEvaluable(f"cannot compare {left!r} with {right!r}") from None


# one evaluation per node kind of the grammar (spec/sanity.py)
_NODES: dict[type[ast.AST], Callable[[Any, dict[str, object]], object]] = {
    ast.Expression: _expression,
    ast.Constant: _constant,
    ast.Name: _name,
    ast.BoolOp: _bool_op,
    ast.UnaryOp: _unary_op,
    ast.BinOp: _bin_op,
    ast.Compare: _compare,
}


def _number(value: object) -> int | float:
    if isinstance(value, str) or not isinstance(value, (int, float)):
        raise NotEvaluable(f"{value!r} is not a number")
    return value


def check_expression(check: Sanity, lookup: Callable[[str], object]) -> str:
    """'' when the expression holds for the row's values (`lookup(name)`: MISSING when it has none),
    else why not."""
    tree = _tree(check.text)
    values = _known_values(tree, lookup)
    shown = ", ".join(f"{k}={_short(v)}" for k, v in values.items())
    with_values = f" ({shown})" if shown else ""
    try:
        result = evaluate(tree, values)
    except NotEvaluable as exc:
        return f"expr {check.text!r} cannot be evaluated: {exc}{with_values}"
    if isinstance(result, float) and math.isnan(result) or not result:
        return f"expr {check.text!r} is false{with_values}"
    return ""


def _known_values(tree: ast.Expression, lookup: Callable[[str], object]) -> dict[str, object]:
    """The values of the names the expression reads, those the row has (not MISSING, not None)."""
    values = {name: lookup(name) for name in expression_names(tree)}
    return {
        name: value for name, value in values.items() if value is not MISSING and value is not None
    }


@functools.lru_cache(maxsize=256)
def _tree(text: str) -> ast.Expression:
    return ast.parse(plain_names(text), mode="eval")


def _short(value: object) -> str:
    return (
        f"{value:.6g}"
        if isinstance(value, float)
        else repr(value)
        if isinstance(value, str)
        else str(value)
    )


def check_file(check: Sanity, wp: WPRecord) -> str:
    """'' when the log check holds in `wp`'s work folder, else why not."""
    name = substitute(check.file, wp.params, final=True) if "$" in check.file else check.file
    label = f"{name} of {wp.id}_{wp.step}"
    folder = os.path.realpath(wp.work_dir)
    path = os.path.realpath(os.path.join(wp.work_dir, name))
    if os.path.commonpath([path, folder]) != folder:
        return f"{name} is outside the work folder of {wp.id}_{wp.step}"
    bound = current().pattern_timeout
    try:
        stopped, found = _first_match(check, path, bound)
    except OSError:
        return f"expect /{check.text}/: {label} is missing" if check.kind == "expect" else ""
    if stopped:
        return (
            f"{check.kind} /{check.text}/ did not finish within {bound:g} s on {label} "
            "(pattern_timeout)"
        )
    return _file_verdict(check, label, found)


def _first_match(check: Sanity, path: str, bound: float) -> tuple[list[str], list[str]]:
    """The probe stopped at its time bound (if it was), and the check's first match in the file
    (OSError where it cannot be read)."""
    # `re`'s syntax, and a time bound on each match (analyse.scan); imported where a check reads a
    # file: a `bench result` that finds nothing changed checks nothing
    import regex

    found: list[str] = []
    stopped = scan_file(
        path,
        [Probe("sanity", regex.compile(check.text, regex.MULTILINE), "string")],
        lambda _name, texts: found.extend(texts[:1]),
        bound=bound,
    )
    return stopped, found


def _file_verdict(check: Sanity, label: str, found: list[str]) -> str:
    """`expect` fails without a match, `reject` with one."""
    if check.kind == "expect" and not found:
        return f"expect /{check.text}/ not found in {label}"
    if check.kind == "reject" and found:
        return f"reject /{check.text}/ found in {label}: {found[0][:80]!r}"
    return ""


def row_failure(
    inp: AnalysisInput,
    analyser: str,
    chain: list[WPRecord],
    groups: Mapping[int, Group],
    lookup: Callable[[str], object],
) -> str:
    """The first sanity check of the row that fails ('' when all hold): the checks of each step
    along the chain (on each workpackage of its result group), then those of the analyser (on the
    leaf's)."""
    for owner, sanity, members in _owners(inp, analyser, chain, groups):
        for check in sanity:
            why = _check_fails(check, lookup, members)
            if why:
                return f"sanity of {owner}: {why}"
    return ""


def _owners(
    inp: AnalysisInput, analyser: str, chain: list[WPRecord], groups: Mapping[int, Group]
) -> list[tuple[str, list[Sanity], list[WPRecord]]]:
    """Who declares checks along the row, with the checks and the workpackages they read: each step
    of the chain (its result group), then the analyser (the leaf's group)."""
    bench = inp.benchmark
    owners: list[tuple[str, list[Sanity], list[WPRecord]]] = []
    for wp in chain:
        step = bench.steps.get(wp.step)
        if step is not None and step.sanity:
            owners.append((f"step '{wp.step}'", step.sanity, _members(inp, wp, groups)))
    checks = bench.analysers[analyser].sanity if analyser in bench.analysers else []
    if checks:
        owners.append((f"analyser '{analyser}'", checks, _members(inp, chain[-1], groups)))
    return owners


def _check_fails(check: Sanity, lookup: Callable[[str], object], members: list[WPRecord]) -> str:
    """Why a check fails for the row: an expression on its values, a log check on the first
    member's file that fails it; '' when it holds."""
    if check.kind == "expr":
        return check_expression(check, lookup)
    return next((why for why in (check_file(check, m) for m in members) if why), "")


def workpackage_failure(inp: AnalysisInput, wp: WPRecord, values: dict[str, object]) -> str:
    """The first sanity check of `wp`'s step that fails for it ('' when all hold): for a figure of a
    `performance:` line, whose `values` are its own (performance, metric) and the parameters."""

    def lookup(name: str) -> object:
        if name in values:
            return values[name]
        return wp.params.typed(name) if name in wp.params else MISSING

    step = inp.benchmark.steps.get(wp.step)
    for check in step.sanity if step is not None else []:
        why = check_expression(check, lookup) if check.kind == "expr" else check_file(check, wp)
        if why:
            return f"sanity of step '{wp.step}': {why}"
    return ""


def _members(inp: AnalysisInput, wp: WPRecord, groups: Mapping[int, Group]) -> list[WPRecord]:
    group = groups.get(wp.id)
    if group is None:
        return [wp]
    return [wp] + [inp.wp(m) for m in group.members if m != wp.id]
