"""A step's time limit becomes the SLURM job's --time unless the workpackage sets `timelimit`."""

from __future__ import annotations

from caramel.adapters.backends import schedulers
from caramel.adapters.systems.model import System
from caramel.stages.engine.jobscript import resources
from caramel.stages.spec.model import Benchmark


def _bench(time_limit: str = "00:15:00") -> Benchmark:
    system = System("site", nodes=1, tasks_per_node=1, cpus_per_task=4, time_limit=time_limit, partition="batch")
    return Benchmark("b", "runs", system=system)


def test_step_limit_becomes_the_job_time() -> None:
    assert resources(_bench(), {}, 90)["time_limit"] == "00:01:30"


def test_timelimit_parameter_wins_over_the_step_limit() -> None:
    assert resources(_bench(), {"timelimit": "00:35:00"}, 90)["time_limit"] == "00:35:00"


def test_without_a_limit_the_system_default_stays() -> None:
    assert resources(_bench(), {}, 0)["time_limit"] == "00:15:00"


def test_slurm_time_rounds_up_and_counts_days() -> None:
    slurm_time = schedulers.get("slurm").time_text  # the scheduler owns its time format
    assert slurm_time(0.2) == "00:00:01"
    assert slurm_time(2 * 86400 + 3661) == "2-01:01:01"


def test_a_scheduler_without_a_format_of_its_own_writes_hours_past_a_day() -> None:
    assert schedulers.get("none").time_text(2 * 86400 + 3661) == "49:01:01"
