"""A benchmark knowing its system: `bench.system`, and the `system` parameterset its steps `use`.

Apart from the model (systems.model) because the error of a benchmark that needs a system and has
none lists the system files (systems.loader), which read the model.
"""

from __future__ import annotations

import copy

from caramel.adapters.systems.loader import system_names
from caramel.adapters.systems.model import System
from caramel.errors import SpecError
from caramel.stages.spec import model as m


def with_system(bench: m.Benchmark, system: System | None) -> m.Benchmark:
    """`bench` knowing its system: `bench.system`, and a parameterset `system` (unless the file has
    its own of that name) that steps can `use`."""
    if system is None:
        _needs_no_system(bench)
        return bench
    bench = copy.copy(bench)
    bench.system = system
    if "system" not in bench.parametersets:
        pset = m.Parameterset("system", where=system.where)
        for name, value in system.parameters().items():
            # one value each, whatever commas the text holds (a description, launcher flags)
            pset.parameters.append(m.Parameter(name, value, separator="\x1f", where=system.where))
        bench.parametersets = dict(bench.parametersets, system=pset)
    return bench


def _needs_no_system(bench: m.Benchmark) -> None:
    """A benchmark whose steps use the `system` parameterset (and that has none of its own) takes
    its per-system facts from a system file: without a system tag it cannot plan."""
    if "system" in bench.parametersets:
        return
    for step in bench.steps.values():
        for use in step.uses:
            if "system" in (n.strip() for raw in use.names for n in raw.split(",")):
                raise SpecError(
                    f"step '{step.name}' uses the system's settings, "
                    "but no tag names a system file",
                    use.where,
                    hint="add a system tag, one of: "
                    + ", ".join(system_names())
                    + " (or a file of your own with --systems DIR, see docs/systems.md)",
                )
