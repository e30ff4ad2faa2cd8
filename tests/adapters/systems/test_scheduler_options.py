"""A system's further job script directives: `scheduler_options`, or `extra_sbatch` as files written
for SLURM say; the scheduler writes them as its own directive lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from caramel.adapters.systems import load_system
from caramel.adapters.systems.model import System
from caramel.errors import SpecError
from caramel.stages.state.codec import decode


@pytest.mark.parametrize("key", ["scheduler_options", "extra_sbatch"])
def test_either_name_gives_the_schedulers_options(tmp_path: Path, key: str) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(f"scheduler: slurm\n{key}: ['--exclusive', '--hold']\n")
    system = load_system(path)
    assert system.scheduler_options == ["--exclusive", "--hold"]
    assert system.parameters()["system_scheduler_options"] == "--exclusive --hold"


def test_both_names_at_once_are_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("scheduler_options: ['--hold']\nextra_sbatch: ['--exclusive']\n")
    with pytest.raises(SpecError, match="'extra_sbatch' and 'scheduler_options' are one setting") as err:
        load_system(path)
    assert err.value.where.line == 2


def test_a_run_stored_with_extra_sbatch_still_reads() -> None:
    stored = {"name": "site", "scheduler": "slurm", "extra_sbatch": ["--exclusive"]}
    assert decode(System, stored, "the system").scheduler_options == ["--exclusive"]
