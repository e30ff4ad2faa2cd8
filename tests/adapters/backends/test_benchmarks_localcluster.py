"""The shipped benchmarks on the test cluster: caramel's trainers as SLURM jobs (`--tag localcluster`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tests.shipped import copy_benchmarks

from .test_slurm_cluster import bench, status

ROOT = Path(__file__).resolve().parents[3]


def test_llm_benchmark_runs_as_a_job_on_the_test_cluster(env, tmp_path):
    copy_benchmarks(tmp_path / "benchmarks")
    started = bench("run", "benchmarks/llm.yaml", "--tag", "117M", "localcluster", "smoke", cwd=tmp_path, env=env,
                    timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    job = status(tmp_path, env)[0]["job_id"]
    assert job.isdigit()
    done = bench("continue", "-i", "last", "--wait", "--interval", "2", cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = bench("result", "-i", "last", cwd=tmp_path, env=env)
    (row,) = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert row["JobID"] == job and row["System"] == "localcluster" and row["Queue"] == "debug"
    assert row["Iterations"] == "60" and float(row["Tokens/second"]) > 0
    assert row["Energy(Wh)"] == "" and row["EnergyStatus"].startswith("unavailable")


def test_resnet_benchmark_runs_as_a_job_on_the_test_cluster(env, tmp_path):
    copy_benchmarks(tmp_path / "benchmarks")
    started = bench("run", "benchmarks/resnet50.xml", "--tag", "localcluster", cwd=tmp_path, env=env, timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    job = status(tmp_path, env)[0]["job_id"]
    done = bench("continue", "-i", "last", "--wait", "--interval", "2", cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = bench("result", "-i", "last", cwd=tmp_path, env=env)
    (row,) = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert row["JobID"] == job and row["System"] == "localcluster" and float(row["Images/second"]) > 0
