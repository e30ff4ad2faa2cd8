"""The do of a call: step (engine/call_job.py): submitit's local executor requeues a function that
can checkpoint when its time runs out; on SLURM the job script carries the system file's settings."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from caramel.adapters.systems.model import System
from caramel.stages.engine.call import executor_parameters

SLOW = '''
import os
import time


def slow(size: int):
    if os.path.exists("saved"):
        return {"resumed": 1.0, "size": size, "saved": float(open("saved").read())}
    time.sleep(60)
    return {"resumed": 0.0}


def save(size: int):
    with open("saved", "w") as handle:
        handle.write(str(size * 10))


slow.checkpoint = save


def stubborn(size: int):
    time.sleep(60)
    return {"size": size}
'''


def call_job(work: Path, target: str, scheduler: str, executor: dict, env: dict | None = None):
    call = {"target": target, "home": str(work), "kwargs": {"size": 3}, "scheduler": scheduler,
            "executor": executor, "file": "call.json", "where": "bench.yaml:7"}
    return subprocess.run([sys.executable, "-m", "caramel.stages.engine.call_job", json.dumps(call)], cwd=work,
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.slow
def test_a_function_that_checkpoints_is_requeued_when_its_time_runs_out_and_resumes(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    # submitit's local time limit: 15 s, its warning signal 10 s before: the first call is stopped after 5 s
    # (time for the job's Python to start and install submitit's handler on a busy machine)
    done = call_job(tmp_path, "slow:slow", "local", {"timeout_min": 0.25, "signal_delay_s": 10})
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "figures.json").read_text())
    assert record["status"] == "done"
    assert record["figures"] == {"resumed": 1.0, "size": 3, "saved": 30.0,
                                 "energy_status": "unavailable: this system has no energy method"}


@pytest.mark.slow
def test_a_function_that_cannot_checkpoint_fails_when_its_time_runs_out(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    done = call_job(tmp_path, "slow:stubborn", "local", {"timeout_min": 0.25, "signal_delay_s": 10})
    assert done.returncode == 1
    assert "not requeued because: timed-out and not checkpointable" in done.stderr
    assert json.loads((tmp_path / "figures.json").read_text())["status"] == "failed"


def test_on_slurm_the_job_script_carries_the_system_files_settings_and_the_job_id_is_printed(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {tmp_path}/script.sh\necho "Submitted batch job 4242"\n')
    # submitit's SlurmExecutor refuses to start where `srun` is not on PATH (submitit/slurm/slurm.py,
    # SlurmExecutor.__init__): faked too, so the test needs no SLURM on the machine
    (fake / "srun").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("sbatch", "srun"):
        (fake / tool).chmod((fake / tool).stat().st_mode | stat.S_IEXEC)
    work = tmp_path / "work"
    work.mkdir()
    (work / "slow.py").write_text(SLOW)
    system = System("cluster", scheduler="slurm", partition="debug", account="team", gpus_per_node=4,
                    time_limit="01:30:00")
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    done = call_job(work, "slow:slow", "slurm", executor_parameters(system, 0.0, "b.train"), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Submitted batch job 4242"  # what the engine reads the job id from
    script = (tmp_path / "script.sh").read_text()
    for line in ("--partition=debug", "--account=team", "--gpus-per-node=4", "--time=90", "--job-name=b.train"):
        assert f"#SBATCH {line}\n" in script
    assert json.loads((work / "call.json").read_text())["target"] == "slow:slow"


def test_a_step_time_limit_is_the_executors_in_minutes_and_local_has_no_two_minute_default():
    assert executor_parameters(None, 0.0)["timeout_min"] > 60 * 24
    assert executor_parameters(None, 90.0) == {"timeout_min": 1.5}
    assert executor_parameters(System("c", scheduler="slurm", time_limit="2-00:00:00"), 0.0)["time"] == 2 * 24 * 60


ENERGETIC = '''
import time


def busy(size: int):
    time.sleep(0.4)
    return {"size": size}
'''


def test_the_function_is_measured_with_the_systems_energy_method(tmp_path, monkeypatch):
    from tests.adapters.energy.fake_hwmon import make_hwmon

    from caramel.payloads.call import CallPayload

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CARAMEL_HWMON_BASE", str(make_hwmon(tmp_path / "hwmon", {"Module 0 Power": 100.0,
                                                                                  "Module 1 Power": 50.0})))
    (tmp_path / "energetic.py").write_text(ENERGETIC)
    assert CallPayload("energetic:busy", str(tmp_path), {"size": 2}, str(tmp_path), energy="gh", system="box")() == 0
    figures = json.loads((tmp_path / "figures.json").read_text())["figures"]
    assert figures["size"] == 2 and figures["energy_status"] == "ok"
    assert 150 * 0.35 / 3600 < figures["energy_wh"] < 150 * 2.0 / 3600  # 150 W for about 0.4 s
    assert (tmp_path / "energy" / "energy.box_power.0.csv").is_file()
    assert "caramel-figure energy_wh = " in (tmp_path / "figures.txt").read_text()


def test_without_an_energy_method_the_status_says_so(tmp_path, monkeypatch):
    from caramel.payloads.call import CallPayload

    monkeypatch.chdir(tmp_path)
    (tmp_path / "energetic.py").write_text(ENERGETIC.replace("0.4", "0"))
    assert CallPayload("energetic:busy", str(tmp_path), {"size": 1}, str(tmp_path), energy="none")() == 0
    figures = json.loads((tmp_path / "figures.json").read_text())["figures"]
    assert figures == {"size": 1, "energy_status": "unavailable: this system has no energy method"}
