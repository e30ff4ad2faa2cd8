"""A `call:` target checked without running anything of it, for `--no-eval` (docs/security.md).

`bench plan --no-eval` and `bench run --dry-run --no-eval` promise that nothing of the file is
imported, executed or evaluated, and a module beside the file is the file's own code. So the target
is resolved by name: each part of the module's name is found with `importlib.machinery.PathFinder`
(which reads folders, and unlike `importlib.util.find_spec` never imports a parent package), and the
function's name is looked up in the module's source parsed with `ast` (reading text runs nothing).
A function's `caramel_figures` is read only when the source assigns it a literal
(`train.caramel_figures = {"loss": ""}`).
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass
from importlib.machinery import ModuleSpec, PathFinder

from caramel.errors import Location, SpecError, did_you_mean

ATTRIBUTE = "caramel_figures"  # spec.call.ATTRIBUTE


@dataclass(frozen=True)
class StaticTarget:
    """What reading the module's source found: its top-level names and literal `caramel_figures`."""

    target: str
    source: str  # the module's file ("" where there is none to read: built in, compiled, namespace)
    names: tuple[str, ...]
    figures: (
        dict[str, object] | None
    )  # the function's literal caramel_figures, if the source sets one


def find_target(target: str, where: Location, home: str) -> StaticTarget:
    """The module of `module:function` found by name and the function looked up in its source; a
    missing module or function is a SpecError naming the file and line."""
    module_name, _, attr = target.partition(":")
    spec = _find_module(module_name, [os.path.abspath(home), *sys.path], target, where)
    origin = spec.origin or ""
    if not origin.endswith(".py") or not os.path.isfile(origin):
        # nothing to read: the name is checked when the step runs
        return StaticTarget(target, "", (), None)
    tree = _parse_source(origin, target, where)
    names = _top_level_names(tree)
    first = attr.split(".")[0]
    if first not in names:
        raise SpecError(
            f"call {target!r}: {module_name} has no {first!r}",
            where,
            hint=_names_hint(first, names),
        )
    return StaticTarget(target, origin, tuple(names), _literal_figures(tree, first))


def _parse_source(origin: str, target: str, where: Location) -> ast.Module:
    try:
        with open(origin, encoding="utf-8") as handle:
            return ast.parse(handle.read(), origin)
    except (OSError, SyntaxError, ValueError) as exc:
        raise SpecError(f"call {target!r}: cannot read {origin}: {exc}", where) from None


def _names_hint(first: str, names: list[str]) -> str:
    """A close public name of the module, else its public names."""
    public = [n for n in names if not n.startswith("_")]
    return did_you_mean(first, public) or "names there: " + ", ".join(public)[:300]


def _find_module(name: str, path: list[str], target: str, where: Location) -> ModuleSpec:
    """The spec of module `name`, found part by part without importing any of them."""
    spec: ModuleSpec | None = None
    search: list[str] | None = path
    for depth, part in enumerate(name.split(".")):
        found = PathFinder.find_spec(part, search)
        if found is None:
            return _not_found(name, depth, target, where)
        spec = found
        search = list(found.submodule_search_locations or [])
    assert spec is not None  # a name has at least one part
    return spec


def _not_found(name: str, depth: int, target: str, where: Location) -> ModuleSpec:
    """A built-in top-level module's spec; any other module not found is an error."""
    parts = name.split(".")
    if depth == 0 and parts[0] in sys.builtin_module_names:
        return ModuleSpec(parts[0], None, origin="built-in")
    missing = ".".join(parts[: depth + 1])
    raise SpecError(
        f"call {target!r}: no module named {missing!r}",
        where,
        hint="is the package installed, or the module beside the benchmark file? "
        "(--no-eval: found by name, nothing imported)",
    )


def _top_level_names(tree: ast.Module) -> list[str]:
    """The names a module's top level binds: functions, classes, assignments and imports."""
    return [name for node in tree.body for name in _bound_names(node)]


def _bound_names(node: ast.stmt) -> list[str]:
    """The names one top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return _assigned(node.targets)
    if isinstance(node, ast.AnnAssign):
        return _assigned([node.target])
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _imported(node)
    return []


def _assigned(targets: list[ast.expr]) -> list[str]:
    return [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """`import a.b as c` binds c, `import a.b` binds a."""
    return [(alias.asname or alias.name).split(".")[0] for alias in node.names]


def _literal_figures(tree: ast.Module, function: str) -> dict[str, object] | None:
    """`function.caramel_figures = {...}` at the top level, when its value is a literal."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            _is_figures_of(target, function) for target in node.targets
        ):
            return _literal_mapping(node.value)
    return None


def _is_figures_of(target: ast.expr, function: str) -> bool:
    """`function.caramel_figures`."""
    return (
        isinstance(target, ast.Attribute)
        and target.attr == ATTRIBUTE
        and isinstance(target.value, ast.Name)
        and target.value.id == function
    )


def _literal_mapping(value: ast.expr) -> dict[str, object] | None:
    try:
        literal = ast.literal_eval(value)
    except ValueError:
        return None
    return literal if isinstance(literal, dict) else None
