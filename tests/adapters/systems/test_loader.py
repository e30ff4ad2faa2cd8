"""What a system file may name comes from one list each: the scheduler registry, the container
runtimes of caramel.adapters.containers.runtime, the energy methods of caramel.payloads.measure."""

from __future__ import annotations

import pytest

from caramel.adapters.backends import schedulers
from caramel.adapters.containers import runtime
from caramel.adapters.systems import load_system
from caramel.adapters.systems.loader import known_values
from caramel.errors import SpecError
from caramel.payloads import measure


def test_the_known_values_are_the_registries() -> None:
    known = known_values()
    assert known["scheduler"] == schedulers.names() == ["local", "none", "pbs", "slurm"]
    assert known["container_runtime"] == ["", *runtime.RUNTIMES]
    assert known["energy_method"] == ["", measure.NO_METHOD, *measure.METHODS]


def test_a_runtime_added_to_its_package_is_valid_in_system_files(tmp_path, monkeypatch) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("scheduler: slurm\ncontainer_runtime: podman\n")
    with pytest.raises(SpecError, match="container_runtime: 'podman' is not known") as err:
        load_system(path)
    assert err.value.where.line == 2 and "apptainer" in err.value.hint
    monkeypatch.setitem(runtime.RUNTIMES, "podman", runtime.Apptainer)
    assert load_system(path).container_runtime == "podman"


def test_a_misspelt_energy_method_gets_a_did_you_mean(tmp_path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("energy_method: pynvm\n")
    with pytest.raises(SpecError, match="energy_method: 'pynvm' is not known") as err:
        load_system(path)
    assert err.value.hint == "did you mean 'pynvml'?"
