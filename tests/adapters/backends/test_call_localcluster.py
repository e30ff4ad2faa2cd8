"""call: benchmarks on the real test cluster (tests/cluster/localcluster.sh): submitit's SlurmExecutor
submits a step's workpackages as one job array (its batch submission) with the system file's
partition and account, or one job each (`array: false`), sacct follows them,
the returned figures fill the table and the history, a raising function is a failed row with its
exception. Needs the cluster (skipped without it, as every test here using `env`)."""

from __future__ import annotations

import csv
import io
import json
import time

from tests.shipped import copy_benchmarks

from .test_slurm_arrays import slurm
from .test_slurm_cluster import bench, sacct_state, status

FUNCTIONS = '''
def measure(size: int, scale: float):
    if size == 0:
        raise ValueError("no size\\nsize 0 cannot be measured")
    return {"rate": size * scale, "latency_ms": 10.0 / size}
'''
SWEEP = """
name: sweep
outpath: runs
parameterset:
  - name: p
    parameter:
      - {{name: size, type: int, _: "{sizes}"}}
      - {{name: scale, type: float, _: "1.0,2.0"}}
step:
  - name: measure
    use: p
    call: functions:measure
    figure: [{{name: rate, unit: items/s}}, {{name: latency_ms, unit: ms}}]
"""


def test_a_call_sweep_of_six_configurations_runs_as_one_array_on_the_test_cluster(env, tmp_path):
    """submitit's batch submission: one sbatch, a job array of six tasks, each its own row."""
    env = dict(env, CARAMEL_HISTORY=str(tmp_path / "history.db"), CARAMEL_SCHEDULER_LOG=str(tmp_path / "calls.log"))
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(sizes="1,2,3"))
    started = bench("run", "sweep.yaml", "--tag", "localcluster", cwd=tmp_path, env=env, timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    jobs = [wp["job_id"] for wp in status(tmp_path, env).values() if wp.get("job_id")]
    array = jobs[0].split("_")[0]
    assert jobs == [f"{array}_{i}" for i in range(6)]
    sbatch = [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.split()[1] == "sbatch"]
    assert len(sbatch) == 1
    done = bench("continue", "-i", "last", "--wait", "--interval", "2", cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert final_states(jobs, env) == {"COMPLETED"}
    assert len(slurm(env, "sacct", "-X", "-n", "-P", "-o", "JobID", "-j", array).split()) == 6  # six tasks
    assert list((tmp_path / "runs" / "000000" / ".caramel_arrays").iterdir())[0].name == "measure.0"
    shown = bench("result", "-i", "last", "--format", "csv", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert [float(r["rate[items/s]"]) for r in rows] == [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]
    exported = bench("export", "--benchmark", "sweep", cwd=tmp_path, env=env)
    metrics = [m for line in exported.stdout.splitlines() for m in json.loads(line)["metrics"]]
    assert len(metrics) == 12


def test_a_raising_function_is_a_failed_row_on_the_test_cluster(env, tmp_path):
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(sizes="0,1"))
    bench("run", "sweep.yaml", "--tag", "localcluster", cwd=tmp_path, env=env, timeout=300)
    bench("continue", "-i", "last", "--wait", "--interval", "2", cwd=tmp_path, env=env, timeout=600)
    states = status(tmp_path, env)
    failed = [wp for wp in states.values() if wp["state"] == "failed"]
    assert len(failed) == 2 and all("ValueError: size 0 cannot be measured" in wp["reason"] for wp in failed)
    assert len({wp["job_id"].split("_")[0] for wp in states.values()}) == 1  # the four: tasks of one array
    assert sum(wp["state"] == "done" for wp in states.values()) == 2


def test_the_gpt_function_benchmark_runs_on_the_test_cluster(env, tmp_path):
    copy_benchmarks(tmp_path / "benchmarks")
    started = bench("run", "benchmarks/gpt_function.yaml", "--tag", "localcluster", cwd=tmp_path, env=env,
                    timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    done = bench("continue", "-i", "last", "--wait", "--interval", "2", cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = bench("result", "-i", "last", "--format", "csv", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert len(rows) == 3 and all(float(r["tokens_per_s[tokens/s]"]) > 0 for r in rows)


def final_states(jobs: list[str], env: dict[str, str]) -> set[str]:
    """The tasks' states once accounting has them all: a task writes its done file before it ends, so
    `bench continue` may finish while slurmctld has yet to record the last task's end (sacct shows
    nothing or RUNNING for it a moment longer)."""
    for _ in range(60):
        states = {sacct_state(job, env) for job in jobs}
        if not states & {"", "RUNNING", "PENDING", "COMPLETING"}:
            return states
        time.sleep(0.5)
    return states
