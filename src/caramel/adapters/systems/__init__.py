"""Systems: one YAML file per system tag (`systems/A100.yaml`), what a site is and how to use it.

    system = find_system({"800M", "A100"})        # the tag that names a system, or None
    bench = with_system(bench, system)              # its `system` parameterset, its scheduler

Search order: `--systems DIR` (repeatable), `$CARAMEL_SYSTEMS_PATH` (colon-separated), then the
`systems/` folder shipped with caramel. The first file named after a tag wins, so a site can
override a shipped system by adding its own folder.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ below returns, for the type checker
    from caramel.adapters.systems.apply import with_system as with_system
    from caramel.adapters.systems.loader import find_system as find_system
    from caramel.adapters.systems.loader import load_system as load_system
    from caramel.adapters.systems.loader import search_path as search_path
    from caramel.adapters.systems.loader import system_names as system_names
    from caramel.adapters.systems.model import System as System

# Imported when first asked for: reading a stored run needs systems.model only, and the loader
# (YAML, the backends' registries, energy methods) costs every `bench result` a share of its budget.
_WHERE = {
    "find_system": "loader",
    "load_system": "loader",
    "search_path": "loader",
    "system_names": "loader",
    "System": "model",
    "with_system": "apply",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> object:
    if name in _WHERE:
        return getattr(importlib.import_module(f"caramel.adapters.systems.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'caramel.adapters.systems' has no attribute {name!r}")
