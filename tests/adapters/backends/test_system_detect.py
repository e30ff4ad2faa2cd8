"""`bench system detect` and `check` on the real test cluster; the detected file runs a job there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

from .test_slurm_cluster import bench

JOB = """name: site_job
outpath: runs
step:
  - name: train
    use: system
    submit: true
    do:
      - echo "partition $system_partition account $system_account on $$SLURM_JOB_PARTITION"
"""


def test_detect_writes_a_system_that_checks_and_runs_a_job(env, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    detected = bench("system", "detect", "--partition", "batch", "-o", str(site / "mysite.yaml"), cwd=tmp_path,
                     env=env)
    assert detected.returncode == 0, detected.stderr
    data = yaml.safe_load((site / "mysite.yaml").read_text())
    assert data["scheduler"] == "slurm" and data["partition"] == "batch" and data["launcher"] == "srun"
    assert data["cpus_per_task"] == 128 and data["gpus_per_node"] == 8 and data["gres"] == "gpu:8"
    assert data["account"] in ("caramel", "root")  # what sacctmgr associates with this user
    assert "# GUESS" in (site / "mysite.yaml").read_text()  # where it had to guess, it says so
    checked = bench("system", "check", "mysite", "--systems", str(site), cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok    partition batch: listed by sinfo" in checked.stdout
    (tmp_path / "job.yaml").write_text(JOB)
    started = bench("run", "job.yaml", "--tag", "mysite", "--systems", str(site), cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    script = (tmp_path / "runs/000000/000000_train/work/caramel_job.sh").read_text()
    assert "#SBATCH --partition=batch\n" in script and f"#SBATCH --account={data['account']}\n" in script
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = (tmp_path / "runs/000000/000000_train/work/job.out").read_text()
    assert f"partition batch account {data['account']} on batch" in out


def test_check_reports_what_fails_with_exit_1(env, tmp_path: Path) -> None:
    checked = bench("system", "check", "A100", cwd=tmp_path, env=env)
    assert checked.returncode == 1
    assert "ok    partition dc-gpu: listed by sinfo" in checked.stdout
    assert "FAIL  container runtime apptainer: apptainer not on PATH" in checked.stdout
    assert "FAIL  energy method pynvml" in checked.stdout and "failed" in checked.stdout.splitlines()[-1]


def test_detect_without_slurm_says_so_and_writes_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    env["PATH"] = os.path.dirname(sys.executable)  # no sinfo there
    env["CARAMEL_DATA_DIR"] = str(tmp_path / "data")
    done = bench("system", "detect", "-o", str(tmp_path / "x.yaml"), cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "no batch scheduler here (" in done.stderr and "slurm: sbatch" in done.stderr and "nothing was written" in done.stderr
    assert not (tmp_path / "x.yaml").exists() and "Traceback" not in done.stderr


def test_system_list_and_show(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    site = tmp_path / "site"
    site.mkdir()
    (site / "mine.yaml").write_text("description: my site\nscheduler: slurm\npartition: p1\n")
    listed = bench("system", "list", "--systems", str(site), "--format", "json", cwd=tmp_path, env=env)
    rows = {r["name"]: r for r in __import__("json").loads(listed.stdout)}
    assert rows["mine"]["origin"] == str(site) and rows["A100"]["origin"] == "shipped"
    shown = bench("system", "show", "mine", "--systems", str(site), cwd=tmp_path, env=env)
    assert "system_partition: p1" in shown.stdout
    missing = bench("system", "show", "mien", "--systems", str(site), cwd=tmp_path, env=env)
    assert missing.returncode == 2 and "did you mean 'mine'" in missing.stderr
