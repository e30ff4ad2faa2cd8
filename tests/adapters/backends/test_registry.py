"""The registry both schedulers and launchers use: by name, a name taken once, unknown names answered."""

from __future__ import annotations

import pytest

from caramel.adapters.backends.registry import Registry
from caramel.errors import RunError


def test_register_get_and_names() -> None:
    registry: Registry[object] = Registry("gadget", "nowhere", [])

    @registry.register("pbs")
    class Pbs:
        name = ""

    assert registry.names() == ["pbs"] and Pbs.name == "pbs"
    assert isinstance(registry.get("pbs"), Pbs)
    assert registry.register("pbs")(Pbs) is Pbs  # the same class again is harmless
    with pytest.raises(ValueError, match="already registered as 'pbs'"):
        registry.register("pbs")(type("Other", (), {}))


def test_an_unknown_name_says_which_are_known() -> None:
    registry: Registry[object] = Registry("gadget", "nowhere", [])
    registry.register("flux")(type("Flux", (), {"name": ""}))
    with pytest.raises(RunError, match="no gadget named 'flx'") as err:
        registry.get("flx")
    assert err.value.hint == "did you mean 'flux'?"
    with pytest.raises(RunError) as err:
        registry.get("zzz")
    assert err.value.hint == "gadgets: flux"


def test_a_package_registry_imports_its_modules() -> None:
    from caramel.adapters.backends import launchers, schedulers

    assert schedulers.names() == ["local", "none", "pbs", "slurm"]
    assert launchers.names() == ["local"]
