"""A step that calls a Python function instead of running do's (`call: package.module:function`).

    step:
      - name: train
        use: model
        call: caramel.payloads.workloads.gpt_function:train
        figure:
          - {name: tokens_per_s, unit: tokens/s}
          - {name: loss, direction: lower}

The function is imported while the file is read, in the process that will submit it, so a
misspelt module or function is an error naming the file and line before anything runs. Its figures
are declared by the step (`figure:` entries, XML `<figure name= unit= direction= type=/>`) or, when
the step declares none, by the function's own `caramel_figures` attribute
(`{"tokens_per_s": "tokens/s", "loss": ("", "lower")}`). Each declared figure becomes an ordinary
pattern over the lines the job's payload writes (engine/call_payload.py), so analysis, tables,
history, compare and predict treat them as the figures of any pattern. A benchmark with no
`<result>` gets one table per call step: its parameters and its figures (docs/functions.md).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import re
import reprlib
import sys
import typing
from collections.abc import Iterator

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec import model as m
from caramel.stages.spec.tree import Node

FIGURE_LINES = (
    "figures.txt"  # the payload's figure lines, in the work folder: what the patterns read
)
FIGURES_JSON = "figures.json"  # the payload's record of the call: status, figures, error
CALL_FILE = "call.json"  # what the job runs: the target, its keyword arguments, where to write
FIGURE_PREFIX = "caramel-figure"  # each figure line: `caramel-figure NAME = VALUE`
FIGURE_TYPES = ("float", "int", "string")
ATTRIBUTE = "caramel_figures"  # a function's own declaration of its figures

_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def figures_set(step: str) -> str:
    """The name of the pattern set (and analyser) made for a call step's figures."""
    return f"{step}_figures"


def read_call(node: Node, step: m.Step) -> None:
    """A `<call>` element of a step: its target, checked for form (importability:
    `check_target`)."""
    if step.call:
        raise SpecError(
            f"step '{step.name}' has two <call> elements",
            node.where,
            hint="a step calls one function",
        )
    target = node.text.strip()
    if not _TARGET.match(target):
        raise SpecError(
            f"call {target!r} of step '{step.name}' is not package.module:function",
            node.where,
            hint="write call: package.module:function (the function a Python import reaches)",
        )
    step.call = target
    step.call_where = node.where


def read_figure(node: Node, step: m.Step) -> m.Pattern:
    """A `<figure name= unit= direction= type=>` of a call step: one figure the function returns."""
    from caramel.stages.spec.attributes import pattern_direction, pattern_unit

    name = node.attrs.get("name", "").strip()
    if not _NAME.match(name):
        raise SpecError(
            f"figure name {name!r} of step '{step.name}' is not a name",
            node.where,
            hint="a figure is named like a Python identifier: tokens_per_s",
        )
    type_ = node.attrs.get("type", "float").strip() or "float"
    if type_ not in FIGURE_TYPES:
        raise SpecError(
            f"type={type_!r} of figure '{name}' is not one of {', '.join(FIGURE_TYPES)}",
            node.where,
            hint=did_you_mean(type_, FIGURE_TYPES),
        )
    return m.Pattern(
        name,
        _regex(name),
        type=type_,
        unit=pattern_unit(node, name),
        direction=pattern_direction(node, name),
        where=node.where,
    )


def check_step(step: m.Step) -> None:
    """A step either calls a function or runs do's, never both."""
    if step.call and step.dos:
        raise SpecError(
            f"step '{step.name}' has both do: and call:",
            step.dos[0].where,
            hint="a step runs shell do's or calls one Python function: put the do's in a step of "
            "their own (depend= orders them)",
        )
    if step.call and step.submit:
        raise SpecError(
            f"step '{step.name}': submit= does not apply to a call: step",
            step.call_where,
            hint="a call: step goes to the system's scheduler through submitit by itself",
        )


def finish(bench: m.Benchmark, declared: dict[str, list[m.Pattern]], imports: bool = True) -> None:
    """Check each call step's function and add its figures' pattern set, analyser and (when the file
    has no <result>) table. `declared`: the figures each step's file lists. Without `imports`
    (--no-eval) the function is found by name and never imported (spec.call_static)."""
    tables = []
    for step in bench.steps.values():
        if step.call:
            tables.append(_add_call_step(bench, step, declared.get(step.name), imports))
    if tables and not bench.results:
        bench.results.append(m.Result(list(bench.analysers), tables, where=bench.where))


def _add_call_step(
    bench: m.Benchmark, step: m.Step, declared: list[m.Pattern] | None, imports: bool
) -> m.Table:
    """A call step's figures as its own pattern set and analyser; returns its table."""
    check_step(step)
    patterns = _call_patterns(step, declared, bench.home, imports)
    name = figures_set(step.name)
    if name in bench.patternsets or name in bench.analysers:
        raise SpecError(
            f"'{name}' is the name caramel gives the figures of call step '{step.name}'",
            step.where,
            hint=f"rename the pattern set or analyser called {name}",
        )
    bench.patternsets[name] = m.Patternset(name, patterns, where=step.where)
    bench.analysers[name] = m.Analyser(
        name,
        [],
        [m.Analyse(step.name, [m.AnalyseFile(FIGURE_LINES, [name], step.where)], step.where)],
        where=step.where,
    )
    columns = [m.Column(p) for p in _step_parameters(bench, step)] + [
        m.Column(p.name) for p in patterns
    ]
    return m.Table(step.name, style="pretty", columns=columns, where=step.where)


def _call_patterns(
    step: m.Step, declared: list[m.Pattern] | None, home: str, imports: bool
) -> list[m.Pattern]:
    """The step's figures: those its file declares, else those its function does; then the
    payload's energy figures the step does not declare."""
    own = _own_figures(step, home, imports)  # the function checked, figures or not
    patterns = declared or _declared_by(own, step)
    names = {q.name for q in patterns}
    return patterns + [p for p in _energy_figures(step) if p.name not in names]


def _own_figures(step: m.Step, home: str, imports: bool) -> object:
    """The function's own `caramel_figures` (None: it has none), the function checked on the way."""
    if not imports:
        from caramel.stages.spec.call_static import find_target

        static = find_target(step.call, step.call_where, home)
        return static.figures if static.figures is not None else _NOT_READ
    return getattr(check_target(step.call, step.call_where, home), ATTRIBUTE, None)


_NOT_READ = object()  # --no-eval: a caramel_figures that is not a literal in the source is not read


def check_target(target: str, where: Location, home: str = ".") -> object:
    """Import `module:function` (the benchmark's folder first on the path); the function, or an
    error naming the file and line with a did-you-mean."""
    module_name, _, attr = target.partition(":")
    found: object = _import(target, module_name, where, home)
    for part in attr.split("."):
        if not hasattr(found, part):
            raise SpecError(
                f"call {target!r}: {getattr(found, '__name__', module_name)} has no {part!r}",
                where,
                hint=_attribute_hint(found, part),
            ) from None
        found = getattr(found, part)
    if not callable(found):
        raise SpecError(
            f"call {target!r}: {attr} is a {type(found).__name__}, not a function", where
        )
    _check_return(found, target, where)
    return found


def _import(target: str, module_name: str, where: Location, home: str) -> object:
    """The module a call names; one that is missing or fails to import is a SpecError."""
    with search_path(home):
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or module_name
            raise SpecError(
                f"call {target!r}: no module named {missing!r}",
                where,
                hint=_module_hint(missing, module_name),
            ) from None
        except Exception as exc:  # the module itself fails to import: its own error, in one line
            raise SpecError(
                f"call {target!r}: importing {module_name} failed: {_last_line(exc)}",
                where,
                hint="fix the module, or run `python -c 'import "
                + module_name
                + "'` to see the traceback",
            ) from None


def _public_names(found: object) -> list[str]:
    return [n for n in dir(found) if not n.startswith("_")]


def _attribute_hint(found: object, part: str) -> str:
    """A close name of what `found` holds, else its callables."""
    names = _public_names(found)
    return (
        did_you_mean(part, names)
        or "callables there: "
        + ", ".join(n for n in names if callable(getattr(found, n, None)))[:300]
    )


NOT_MAPPINGS = (list, tuple, set, frozenset, int, float, complex, str, bytes, bool, type(None))


def _check_return(function: object, target: str, where: Location) -> None:
    """A function annotated to return something that is not a mapping is refused before it runs."""
    returns = _declared_return(function)
    if returns is _UNDECLARED or not _is_not_mapping(returns):
        return
    shown = "None" if returns in (None, type(None)) else getattr(returns, "__name__", str(returns))
    raise SpecError(
        f"call {target!r} is declared to return {shown}, not a mapping of figure names to "
        "numbers or texts",
        where,
        hint='return a dict such as {"tokens_per_s": 1234.5}',
    )


_UNDECLARED = object()  # a function without a return annotation (or one not readable here)


def _declared_return(function: object) -> object:
    """The function's return annotation; _UNDECLARED where it has none, or where its hints name
    what is not importable here (checked when it returns)."""
    try:
        returns = typing.get_type_hints(function).get("return", None)
    except Exception:
        return _UNDECLARED
    if returns is None and "return" not in getattr(function, "__annotations__", {}):
        return _UNDECLARED
    return returns


def _is_not_mapping(returns: object) -> bool:
    origin = typing.get_origin(returns) or returns
    return returns is None or returns is type(None) or origin in NOT_MAPPINGS


@contextlib.contextmanager
def search_path(home: str) -> Iterator[None]:
    """The benchmark's folder first on the import path (a module beside the file is found), for a
    while."""
    home = os.path.abspath(home)
    added = home not in sys.path
    if added:
        sys.path.insert(0, home)
    try:
        yield
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(home)


def _module_hint(missing: str, wanted: str) -> str:
    parent, _, leaf = missing.rpartition(".")
    close = did_you_mean(leaf, _sibling_modules(parent))
    if close:
        return close.replace("'", f"'{parent}." if parent else "'", 1)
    return "is the package installed, or the module beside the benchmark file?"


def _sibling_modules(parent: str) -> list[str]:
    """The modules of package `parent` (none where it does not import); top-level: every module
    on the path, and the built-in ones."""
    if not parent:
        return [info.name for info in pkgutil.iter_modules()] + list(sys.builtin_module_names)
    try:
        package = importlib.import_module(parent)
        return [info.name for info in pkgutil.iter_modules(getattr(package, "__path__", []))]
    except Exception:
        return []


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}".rstrip(": ")


def _declared_by(declared: object, step: m.Step) -> list[m.Pattern]:
    """The figures a function declares itself (`caramel_figures`): name -> unit, or (unit,
    direction)."""
    figures = _declared_mapping(declared, step)
    return [_declared_figure(name, spec, step) for name, spec in figures.items()]


def _declared_mapping(declared: object, step: m.Step) -> dict[object, object]:
    """The function's `caramel_figures`, a mapping; not read, missing or not a mapping is an
    error."""
    if declared is _NOT_READ:
        raise SpecError(
            f"--no-eval: step '{step.name}' declares no figure, and the figures of "
            f"{step.call} are known only by importing it",
            step.call_where,
            hint="list the figures in the step (figure: [{name: ..., unit: ...}]), or "
            f"assign {ATTRIBUTE} a literal mapping in the module",
        )
    if declared is None:
        raise SpecError(
            f"step '{step.name}' declares no figure, and {step.call} has no {ATTRIBUTE}",
            step.call_where,
            hint="list the figures the function returns: figure: [{name: tokens_per_s, "
            "unit: tokens/s}] (XML: <figure name=... unit=.../>)",
        )
    if not isinstance(declared, dict):
        raise SpecError(
            f"{step.call}.{ATTRIBUTE} is not a mapping of figure names to units", step.call_where
        )
    return declared


def _declared_figure(name: object, spec: object, step: m.Step) -> m.Pattern:
    """One `name: unit` or `name: (unit, direction)` of `caramel_figures`."""
    pair = unit_and_direction(spec)
    if not isinstance(name, str) or pair is None or _bad_figure(name, *pair):
        raise SpecError(
            f"{step.call}.{ATTRIBUTE}: {reprlib.repr(name)}: {reprlib.repr(spec)} is not a unit "
            "or (unit, direction)",
            step.call_where,
            hint='write {"tokens_per_s": "tokens/s", "loss": ("", "lower")}',
        )
    unit, direction = pair
    return m.Pattern(
        name,
        _regex(name),
        type="float",
        unit=unit,
        direction=direction,
        where=step.call_where,
    )


def unit_and_direction(spec: object) -> tuple[str, str] | None:
    """A text (the unit), or a tuple or list of the unit and, maybe, the direction; None for any
    other shape (a number, a mapping, three items, an item that is no text)."""
    if isinstance(spec, str):
        return spec, ""
    if not isinstance(spec, (tuple, list)) or not 1 <= len(spec) <= 2:
        return None
    if not all(isinstance(item, str) for item in spec):
        return None
    return spec[0], spec[1] if len(spec) == 2 else ""


def _bad_figure(name: str, unit: str, direction: str) -> bool:
    from caramel.stages.spec.units import unit_problem

    return (
        not _NAME.match(name)
        or direction not in ("", "lower", "higher")
        or bool(unit and unit_problem(unit))
    )


def _energy_figures(step: m.Step) -> list[m.Pattern]:
    """What the payload measures besides the function's figures: its energy
    (engine/call_payload.Energy)."""
    return [
        m.Pattern(
            "energy_wh",
            _regex("energy_wh"),
            type="float",
            unit="Wh",
            direction="lower",
            where=step.where,
        ),
        m.Pattern("energy_status", _regex("energy_status"), type="string", where=step.where),
    ]


def _regex(name: str) -> str:
    return rf"^{FIGURE_PREFIX} {name} = (.*)"


def _step_parameters(bench: m.Benchmark, step: m.Step) -> list[str]:
    """The parameters of the sets a step uses (by plain name), in their order: a call table's
    configuration."""
    names: list[str] = []
    for use in step.uses:
        for set_name in use.names:
            pset = bench.parametersets.get(set_name)
            for param in pset.parameters if pset else []:
                if param.name not in names:
                    names.append(param.name)
    return names
