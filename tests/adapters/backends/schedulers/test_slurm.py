"""What caramel reads from SLURM's commands: job ids from sbatch, states from sacct lines; what it
writes: the submit line. The whole path against a real SLURM is tests/adapters/backends/test_slurm_cluster.py."""

from __future__ import annotations

from caramel.adapters.backends import schedulers
from caramel.adapters.backends.schedulers import slurm
from caramel.stages.engine.follow import Pace


def test_job_id_from_plain_and_parsable_sbatch(tmp_path):
    out = tmp_path / "stdout"
    out.write_text("preparing\nSubmitted batch job 41\nSubmitted batch job 42\n")
    assert slurm.job_id_in(str(out)) == "42"  # the last one a do printed
    out.write_text("Submitted batch job 7\n1234;cluster\n")
    assert slurm.job_id_in(str(out)) == "1234"
    out.write_text("nothing submitted\n")
    assert slurm.job_id_in(str(out)) == ""
    assert slurm.job_id_in(str(tmp_path / "missing")) == ""


def test_states_map_to_workpackage_outcomes_with_reasons():
    state = slurm._job_state
    assert state("COMPLETED", "0:0", "None", "n1", "").state == "done"
    failed = state("FAILED", "3:0", "NonZeroExitCode", "n1", "2026-11-22T10:00:00")
    assert (failed.state, failed.exit_code, failed.reason) == ("failed", 3, "FAILED (exit 3): NonZeroExitCode")
    assert failed.ended is not None
    killed = state("FAILED", "0:9", "None", "n1", "")
    assert (killed.reason, killed.exit_code) == ("FAILED (signal 9)", 137)
    for name in ("TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"):
        assert state(name, "0:0", "", "", "").state == "failed", name
    for name in ("PENDING", "REQUEUED"):
        assert state(name, "0:0", "", "", "").state == "pending", name
    assert state("RUNNING", "0:0", "None", "n[1-2]", "Unknown").state == "running"
    assert slurm._state_name("CANCELLED by 0") == "CANCELLED"


def test_failing_scheduler_command_is_retried_then_nothing_known(monkeypatch):
    calls = []

    def broken(argv, timeout=30.0):
        calls.append(argv[0])
        return None  # did not answer in time

    monkeypatch.setattr(slurm, "call", broken)
    monkeypatch.setattr(slurm.time, "sleep", lambda s: None)
    monkeypatch.setattr(slurm.shutil, "which", lambda name: "/usr/bin/" + name)
    assert schedulers.get("slurm").job_states(["1", "2"]) == {}  # never taken as a job failure
    assert calls == ["sacct", "sacct"]


def test_pace_grows_while_nothing_changes_and_resets():
    pace = Pace(first=1, cap=5, factor=2)
    assert [pace.next(False) for _ in range(4)] == [2, 4, 5, 5]
    assert pace.next(True) == 1
    assert Pace(fixed=3).next(False) == 3
