"""caramel's built-in parameters, beside JUBE's `jube_*`: what a benchmark file needs of caramel.

    $caramel_package_home            the folder of the caramel package that plans (src/caramel,
                                     site-packages/caramel): a job imports caramel.payloads from it
    $caramel_gpt_cpu_processes       the CPU layout caramel's trainer takes on the node that plans:
    $caramel_gpt_cpu_threads         processes, threads per process, and what chose them
    $caramel_gpt_cpu_layout_choice   (`2x1 (measured ...)`, `1x2 (rule)`); `resnet` for `gpt`: the
                                     ResNet trainer's (payloads/workloads/layout.py decides)

A file names them as it names `$jube_benchmark_home`, and imports nothing of caramel. Each is made
only for a file whose texts name it (a parameter, a do, a substitution...): the CPU layout samples
the node's load, and a plan of a file that does not ask for it must not pay for it. The layout is a
fact of the site the plan is made for, so it comes through the benchmark's system
(`SystemFacts.cpu_layout`): a file that names one plans with a system tag. docs/file-format.md
lists them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

from caramel.errors import ExpandError, Location
from caramel.stages.expand.substitute import references
from caramel.stages.spec.model import NOWHERE, Benchmark
from caramel.stages.spec.system import CpuLayout

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# caramel's trainers that have a CPU layout (payloads/workloads/layout_probe.py, SHAPES)
TRAINERS = ("gpt", "resnet")
# src/caramel (or site-packages/caramel): this file is caramel/stages/expand/builtins.py
PACKAGE_HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class Builtin:
    name: str
    type: str  # "string" or "int", as a declared parameter type
    value: Callable[[Benchmark], str]  # its text for a benchmark, computed when a file names it
    site_fact: bool = False  # comes from the benchmark's system (SystemFacts)


def _layout(trainer: str, bench: Benchmark) -> CpuLayout:
    assert bench.system is not None  # builtin_values refuses a site fact without a system
    return bench.system.cpu_layout(trainer)


def _layout_builtins(trainer: str) -> list[Builtin]:
    prefix = f"caramel_{trainer}_cpu"
    return [
        Builtin(
            f"{prefix}_processes",
            "int",
            lambda bench: str(_layout(trainer, bench).processes),
            site_fact=True,
        ),
        Builtin(
            f"{prefix}_threads",
            "int",
            lambda bench: str(_layout(trainer, bench).threads),
            site_fact=True,
        ),
        Builtin(
            f"{prefix}_layout_choice",
            "string",
            lambda bench: _layout(trainer, bench).choice,
            site_fact=True,
        ),
    ]


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in [
        Builtin("caramel_package_home", "string", lambda bench: PACKAGE_HOME),
        *(b for trainer in TRAINERS for b in _layout_builtins(trainer)),
    ]
}


def builtin_values(bench: Benchmark) -> list[tuple[str, str, str]]:
    """(name, text, type) of each caramel built-in `bench`'s texts name, in BUILTINS' order. A
    file's own parameter of a built-in's name is refused (the built-in would hide it in every
    step)."""
    named = named_builtins(bench)
    _check_no_parameter_named_so(bench)
    wanted = [b for b in BUILTINS.values() if b.name in named]
    _check_site_facts(wanted, named, bench)
    return [(b.name, b.value(bench), b.type) for b in wanted]


def _check_site_facts(wanted: list[Builtin], named: dict[str, Location], bench: Benchmark) -> None:
    """A built-in that is a fact of the site needs a system to read it from."""
    for builtin in wanted:
        if builtin.site_fact and bench.system is None:
            raise ExpandError(
                f"${builtin.name} is a fact of the site the plan is made for, and no "
                "tag names a system",
                named[builtin.name],
                hint="add a system tag (local: this machine); docs/file-format.md",
            )


def _check_no_parameter_named_so(bench: Benchmark) -> None:
    """No parameter of the file has a built-in's name."""
    for pset in bench.parametersets.values():
        for param in pset.parameters:
            if param.name in BUILTINS:
                raise ExpandError(
                    f"parameter '{param.name}' has the name of a caramel built-in",
                    param.where,
                    hint=f"rename it, or use ${param.name} as it is (docs/file-format.md)",
                )


def named_builtins(bench: Benchmark) -> dict[str, Location]:
    """The caramel built-ins a text of `bench` names, each with the place of its first mention."""
    found: dict[str, Location] = {}
    for text, where in _texts(bench, bench.where):
        for name in references(text) & BUILTINS.keys():
            found.setdefault(name, where)
    return found


def _texts(node: object, where: Location) -> Iterator[tuple[str, Location]]:
    """Every text of the model below `node` holding a `$`, with the place of its nearest definition.
    The system is left out: its texts are the site's, not the file's."""
    if isinstance(node, str) and "$" in node:
        yield node, where
    elif _is_model(node):
        yield from _field_texts(node, where)
    else:
        for item in _items(node):
            yield from _texts(item, where)


def _is_model(node: object) -> TypeGuard[DataclassInstance]:
    """An object of the model (a dataclass instance)."""
    return dataclasses.is_dataclass(node) and not isinstance(node, type)


def _items(node: object) -> Iterable[object]:
    """A mapping's values, or a collection's items; nothing of anything else."""
    if isinstance(node, dict):
        return node.values()
    if isinstance(node, (list, tuple, set, frozenset)):
        return node
    return ()


def _field_texts(node: DataclassInstance, where: Location) -> Iterator[tuple[str, Location]]:
    """The texts of a model object's fields (not its system), placed at its own definition where
    it has one."""
    own = getattr(node, "where", NOWHERE)
    here = own if isinstance(own, Location) and own != NOWHERE else where
    for field in dataclasses.fields(node):
        if field.name != "system":
            yield from _texts(getattr(node, field.name), here)
