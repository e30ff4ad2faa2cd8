"""What the selected system cannot give a plan, found before anything runs.

- a system setting an active command needs but the system file does not state (`$system_account`
  left unresolved): names the system file, the missing key and the benchmark line that uses it;
- more devices than the job gets (`devices_needed` > `nodes` x the system's `gpus_per_node`), or
more
  nodes than the system allows (`max_nodes`): names the system file and the benchmark line.

The system is read from `bench.system` by its attributes only (this stage imports no systems code).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from caramel.errors import Location, SpecError
from caramel.stages.expand.conditions import eval_bool
from caramel.stages.expand.substitute import substitute
from caramel.stages.spec.model import Do
from caramel.stages.spec.system import SystemFacts

if TYPE_CHECKING:  # a plan is checked, never made here: expand.plan calls check_system
    from caramel.stages.expand.plan import Plan, Workpackage

_UNRESOLVED = re.compile(r"\$\{?(system_\w+?)\}?(?![\w])")


def check_system(plan: Plan) -> None:
    system = plan.benchmark.system
    if system is None:
        return
    for wp in plan.workpackages:
        texts = wp.params()
        _check_devices(system, wp, texts)
        for do in wp.step.dos:
            _check_do(system, do, texts, plan)


def _check_do(system: SystemFacts, do: Do, texts: dict[str, str], plan: Plan) -> None:
    """An active do's command names no system setting the system file leaves out."""
    if not eval_bool(substitute(do.active, texts, final=True), "active= of a <do>", do.where):
        return
    for found in _UNRESOLVED.finditer(substitute(do.command, texts, final=True)):
        if _is_system_key(system, found.group(1)[len("system_") :]):
            _missing(system, found.group(1), plan, do.where)


def _is_system_key(system: SystemFacts, key: str) -> bool:
    """A setting a system file may state (an unresolved `$system_x` of another name is the
    file's own text)."""
    return hasattr(system, key) or key.startswith("image_") or key == "container_prefix"


def _missing(system: SystemFacts, name: str, plan: Plan, fallback: Location) -> None:
    key = _system_key(name)
    where = _first_use(plan, name, fallback)
    raise SpecError(
        f"the system file {system.file} has no '{key}', which this benchmark needs ({name})",
        where,
        hint=f"add '{key if ':' in key else key + ': ...'}' to {system.file} (see docs/systems.md)",
    )


def _system_key(name: str) -> str:
    """What a system file writes for `$system_x`."""
    key = name[len("system_") :]
    if key.startswith("image_"):  # one stack of `images:`
        key = f"images: {{{key[len('image_') :]}: FILE}}"
    if key == "container_prefix":  # built from the runtime
        key = "container_runtime"
    return key


def _first_use(plan: Plan, name: str, fallback: Location) -> Location:
    """The line of the first parameter that names `$name`, else `fallback`."""
    used = re.compile(r"\$\{?" + name + r"\b")
    return next(
        (
            param.where
            for pset in plan.benchmark.parametersets.values()
            for param in pset.parameters
            if used.search(str(param.value))
        ),
        fallback,
    )


def _check_devices(system: SystemFacts, wp: Workpackage, texts: dict[str, str]) -> None:
    counts = _devices_and_nodes(texts)
    if counts is None:
        return
    needed, nodes = counts
    where = wp.values["devices_needed"].definition.where
    gpus = system.gpus_per_node
    if gpus and needed > nodes * gpus:
        raise SpecError(
            f"this plan needs {needed} devices, but {nodes} node(s) of system '{system.name}' hold "
            f"{nodes * gpus} ({gpus} per node, {system.file})",
            where,
            hint="choose a smaller model or parallelism, or a system with more GPUs per node "
            "or nodes",
        )
    _check_nodes(system, nodes, where)


def _devices_and_nodes(texts: dict[str, str]) -> tuple[int, int] | None:
    """The workpackage's `devices_needed` and `nodes`, where it has both as whole numbers."""
    if "devices_needed" not in texts or "nodes" not in texts:
        return None
    try:
        return int(texts["devices_needed"]), int(texts["nodes"])
    except ValueError:
        return None


def _check_nodes(system: SystemFacts, nodes: int, where: Location) -> None:
    most = system.max_nodes
    if most and nodes > most:
        raise SpecError(
            f"this plan needs {nodes} nodes, but system '{system.name}' allows at most {most} "
            f"(max_nodes in {system.file})",
            where,
            hint="choose a smaller model or another system",
        )
