"""The none scheduler: a run with no batch system follows no job and submits none."""

from __future__ import annotations

import pytest

from caramel.adapters.backends import schedulers
from caramel.errors import RunError


def test_it_knows_no_jobs_and_needs_no_commands(tmp_path) -> None:
    none = schedulers.get("none")
    out = tmp_path / "stdout"
    out.write_text("Submitted batch job 42\n")
    assert none.job_id_in(str(out)) == ""
    assert none.job_states(["42"]) == {}
    assert none.missing() == [] and not none.found_here()
    assert none.cancel([]) == (True, "")
    assert none.cancel(["42"]) == (False, "no batch scheduler here to cancel jobs with")
    assert schedulers.get("local").name == "none"  # the name system files have used


def test_a_submit_step_without_a_scheduler_is_a_clear_error() -> None:
    with pytest.raises(RunError, match="submit: true needs a batch scheduler") as err:
        schedulers.get("none").submit_line("caramel_job.sh")
    assert "scheduler: slurm" in err.value.hint
