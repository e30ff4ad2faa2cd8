"""Old module names, kept working after the packages moved into stages/, adapters/, consumers/ and payloads/.

Job scripts of runs planned before the move, users' benchmark files and notebooks name modules such as
`python -m caramel.workloads.gpt`, `python -m caramel.energy.measure` or `caramel.spec.model`. A finder
on `sys.meta_path` answers those names with the module at its new place: the same module object, never a
second copy, and `python -m OLD` runs the new file. Nothing in caramel itself uses an old name
(tests/test_layers.py checks that every import names a module that exists).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from types import CodeType, ModuleType

TYPE_CHECKING = False  # not typing's: `import caramel` stays cheap (bench --help); mypy reads it the same
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Loader as _LoaderBase
else:
    _LoaderBase = object  # importlib.abc costs start-up time; a loader needs only the methods below

# Old name (under caramel.) → new name; the longest matching old prefix wins.
MOVED: dict[str, str] = {
    "energy.measure": "payloads.measure",
    "containers.exec": "payloads.container",
    "engine.call_payload": "payloads.call",
    "workloads": "payloads.workloads",
    **{name: f"stages.{name}" for name in ("spec", "expand", "engine", "state", "analyse", "report")},
    **{name: f"adapters.{name}" for name in ("backends", "systems", "containers", "energy")},
    **{name: f"consumers.{name}" for name in ("history", "pages", "predict", "catalog")},
    # `from caramel.energy import measure` asks the moved package for a module it no longer holds
    "adapters.energy.measure": "payloads.measure",
    "adapters.containers.exec": "payloads.container",
    "stages.engine.call_payload": "payloads.call",
}


_LONGEST_FIRST = sorted(MOVED, key=len, reverse=True)


def new_name(fullname: str) -> str | None:
    """The module's name today, for a name from before the move (None: not an old name)."""
    if not fullname.startswith("caramel."):
        return None
    rest = fullname[len("caramel."):]
    for old in _LONGEST_FIRST:
        if rest == old or rest.startswith(old + "."):
            return f"caramel.{MOVED[old]}{rest[len(old):]}"
    return None


class _AliasLoader(_LoaderBase):
    """Loads an old name as the module already at its new place (imported once, under its new name)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran when it was imported under its new name."""

    def get_code(self, fullname: str) -> CodeType | None:
        """For `python -m OLD`: runpy runs the new module's code as __main__."""
        spec = importlib.util.find_spec(self.target)
        loader = spec.loader if spec else None
        get_code = getattr(loader, "get_code", None)  # a source or bytecode loader has one
        return get_code(self.target) if get_code else None

    def is_package(self, fullname: str) -> bool:
        spec = importlib.util.find_spec(self.target)
        return bool(spec and spec.submodule_search_locations is not None)


class _MovedFinder:  # a meta path finder needs only find_spec (importlib.abc would cost start-up time)
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        moved_to = new_name(fullname)
        if moved_to is None:
            return None
        found = importlib.util.find_spec(moved_to)
        if found is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(moved_to), origin=found.origin,
                                              is_package=found.submodule_search_locations is not None)
        spec.has_location = found.has_location  # `python -m OLD` then sees the new file as __file__
        return spec


def install() -> None:
    """Answer old names from now on (once per process). First in line: the path finder would otherwise
    find an old name's submodule in the moved package's folder and run it a second time."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
