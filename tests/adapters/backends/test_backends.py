"""A run's backend: a launcher and a scheduler, chosen for a new run and found again for a stored one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from caramel.adapters import backends
from caramel.adapters.backends import schedulers
from caramel.errors import RunError


@pytest.fixture
def no_batch_system(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedulers.shutil, "which", lambda name: None)


def test_a_new_run_takes_its_systems_scheduler(no_batch_system) -> None:
    backend = backends.for_system(SimpleNamespace(scheduler="slurm"))
    assert (backend.launcher.name, backend.scheduler.name) == ("local", "slurm")
    assert backend.settings() == {"launcher": "local", "scheduler": "slurm"}
    assert backends.for_system(None).scheduler.name == "none"  # no system, no batch system here
    assert backends.for_system(None, scheduler="slurm").scheduler.name == "slurm"
    with pytest.raises(RunError, match="no scheduler named 'lsf'"):
        backends.for_system(None, scheduler="lsf")


def test_a_stored_run_finds_the_names_it_was_started_with(no_batch_system) -> None:
    assert backends.for_run({"launcher": "local", "scheduler": "slurm"}).scheduler.name == "slurm"
    assert backends.for_run({"scheduler": "none"}).scheduler.name == "none"
    # runs stored before launchers and schedulers were apart
    assert backends.for_run({"backend": "slurm"}).scheduler.name == "slurm"
    assert backends.for_run({"backend": "local"}).scheduler.name == "none"
    assert backends.for_run({}).launcher.name == "local"
