"""Module names from before the folders moved (caramel/moved.py): the same module, `python -m` runs it,
and every new name the table points at exists."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

import caramel.moved as moved


@pytest.mark.parametrize(("old", "new"), [
    ("caramel.spec.model", "caramel.stages.spec.model"),
    ("caramel.engine.runner", "caramel.stages.engine.runner"),
    ("caramel.history.store", "caramel.consumers.history.store"),
    ("caramel.catalog", "caramel.consumers.catalog"),
    ("caramel.energy.measure", "caramel.payloads.measure"),
    ("caramel.energy.combine", "caramel.adapters.energy.combine"),
    ("caramel.containers.exec", "caramel.payloads.container"),
    ("caramel.engine.call_payload", "caramel.payloads.call"),
    ("caramel.workloads.layout", "caramel.payloads.workloads.layout"),
])
def test_an_old_name_is_the_module_at_its_new_place(old: str, new: str) -> None:
    assert moved.new_name(old) == new
    assert importlib.import_module(old) is importlib.import_module(new)


def test_a_module_is_imported_once_under_both_names() -> None:
    code = ("import sys, caramel.workloads.layout, caramel.payloads.workloads.layout as new\n"
            "import caramel.workloads.layout as old\n"
            "print(old is new, sum(1 for m in sys.modules.values() if m is new))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "2"]  # one module object, registered under the old and the new name


def test_from_an_old_package_import_a_moved_module() -> None:
    from caramel.containers import exec as old_exec  # type: ignore[import-not-found]
    from caramel.energy import measure  # type: ignore[import-not-found]

    import caramel.payloads.container
    import caramel.payloads.measure
    assert measure is caramel.payloads.measure and old_exec is caramel.payloads.container


def test_python_dash_m_runs_an_old_name() -> None:
    """Job scripts rendered before the move say `python -m caramel.payloads.measure ...`."""
    for old in ("caramel.energy.measure", "caramel.containers.exec"):
        result = subprocess.run([sys.executable, "-m", old, "--help"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("usage:")


def test_every_new_name_exists_and_others_are_left_alone() -> None:
    for target in moved.MOVED.values():
        assert importlib.util.find_spec(f"caramel.{target}") is not None, target
    assert moved.new_name("caramel.errors") is None and moved.new_name("caramel.stages.spec") is None
    assert moved.new_name("caramel.specs") is None and moved.new_name("numpy.spec") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("caramel.spec.no_such_module")
