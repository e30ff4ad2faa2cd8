"""A call: step on a SLURM system, with SLURM faked (sbatch starts the job script in the background,
each task of an array, srun runs its command): submitit's SlurmExecutor submits the step's
workpackages as one array through its batch submission (`array: N`: at most N at once; `array:
false`: one job each), the workpackage waits for the payload's done file like a submit step's, and a
function that raised fails with the exception's last line.
The same on the real test cluster: tests/adapters/backends/test_call_localcluster.py."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

SBATCH = """#!/bin/bash
mkdir -p "{jobs}"; id=$((4242 + $(ls "{jobs}" | wc -l))); grep -e '--array' "$1" > "{jobs}/$id"
tasks=$(sed -n 's/^#SBATCH --array=0-\\([0-9]*\\).*/\\1/p' "$1")
for task in $(if [ -n "$tasks" ]; then seq 0 "$tasks"; else echo none; fi); do
  array=(); [ "$task" = none ] || array=(SLURM_ARRAY_JOB_ID=$id SLURM_ARRAY_TASK_ID=$task)
  name=$id; [ "$task" = none ] || name=${{id}}_$task; mkdir -p "{tasks}"
  (setsid env SLURM_JOB_ID=$id "${{array[@]}}" SLURM_NTASKS=1 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 \\
    SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=localhost \\
    sh -c 'bash "$1" >"$2.log" 2>&1; echo $? >"$2.rc"' task "$1" "{tasks}/$name" </dev/null >/dev/null 2>&1 &)
done
echo "Submitted batch job $id"
"""
# like SLURM's accounting: a task that ended is COMPLETED or FAILED by its exit status, so a task that
# dies before its payload writes call.done/call.error fails its workpackage instead of hanging the test
SACCT = """#!/bin/sh
for rc in "{tasks}"/*.rc; do
  [ -e "$rc" ] || continue; name=$(basename "$rc" .rc); code=$(cat "$rc")
  state=COMPLETED; [ "$code" = 0 ] || state=FAILED; [ -n "$code" ] || continue
  echo "$name|$state|$code:0|None|localhost|2026-01-01T00:00:00|$name"
done
"""
SRUN = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --unbuffered) shift;; --output|--error) shift 2;; *) break;; esac; done
exec "$@"
"""
FUNCTIONS = '''
def measure(size: int):
    if size > 2:
        raise RuntimeError("out of memory\\nsize 3 does not fit")
    return {"rate": size * 1.5}
'''
BENCH = """
name: fn
outpath: runs
parameterset:
  - name: p
    parameter: [{{name: size, type: int, _: "1,2,3"}}]
step:
  - name: run
    use: p
    call: functions:measure
    array: {array}
    figure: [{{name: rate, unit: items/s}}]
"""


def fake_slurm(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "bin"
    fake.mkdir()
    tasks = tmp_path / "tasks"  # each task's output (.log) and exit status (.rc)
    scripts = {"sbatch": SBATCH.format(jobs=tmp_path / "jobs", tasks=tasks), "srun": SRUN, "sacct": SACCT.format(tasks=tasks),
               "scancel": "#!/bin/sh\nexit 0\n", "scontrol": "#!/bin/sh\necho localhost\n"}
    for name, text in scripts.items():
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "fakeslurm.yaml").write_text(
        "scheduler: slurm\npartition: debug\naccount: team\ntime_limit: '00:05:00'\n")
    return isolated_env(tmp_path, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}",
                        CARAMEL_HISTORY=str(tmp_path / "history.db"))


def task_logs(tmp_path: Path) -> str:
    """What the faked jobs printed and how they ended, for a failing assertion's message."""
    return "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')}" for p in sorted((tmp_path / "tasks").glob("*")))


@pytest.mark.slow
def test_a_call_step_goes_to_slurm_through_submitit_and_is_followed_like_a_job(tmp_path):
    env = fake_slurm(tmp_path)
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "b.yaml").write_text(BENCH.format(array="false"))
    started = bench("run", "b.yaml", "--tag", "fakeslurm", "--systems", "systems", cwd=tmp_path, env=env)
    assert "Submitted batch job" not in started.stderr, started.stderr
    assert sorted(p.name for p in (tmp_path / "jobs").iterdir()) == ["4242", "4243", "4244"]  # one job each
    done = bench("continue", "runs", "--wait", "--interval", "1", cwd=tmp_path, env=env, timeout=120)
    # the raising one
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr + task_logs(tmp_path)
    status = bench("status", "runs", cwd=tmp_path, env=env).stdout
    assert "call.error appeared (job 4244): RuntimeError: size 3 does not fit" in status, status
    shown = bench("result", "runs", "--format", "csv", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert [(r["size"], r["rate[items/s]"], r["status"]) for r in rows[:2]] == [
        ("1", "1.5", "done"), ("2", "3.0", "done")]
    # the failed row carries the exception's last line (issue 37)
    assert rows[2]["size"] == "3" and rows[2]["status"].startswith("failed (error file ")
    assert rows[2]["status"].endswith("call.error appeared (job 4244): RuntimeError: size 3 does not fit)")
    script = next((tmp_path / "runs" / "000000" / "000000_run" / "work" / "submitit").glob("*/*_submission.sh"))
    assert "#SBATCH --partition=debug\n" in script.read_text() and "#SBATCH --time=5\n" in script.read_text()


@pytest.mark.slow
def test_a_call_step_is_one_array_through_submitits_batch_submission(tmp_path):
    """One sbatch for the step, `array: 2` as submitit's array_parallelism (%2); each task its own row,
    the raising one failed with its exception's last line; submitit's files in the array's folder."""
    env = fake_slurm(tmp_path)
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "b.yaml").write_text(BENCH.format(array=2))
    started = bench("run", "b.yaml", "--tag", "fakeslurm", "--systems", "systems", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    assert [(p.name, p.read_text()) for p in (tmp_path / "jobs").iterdir()] == [("4242", "#SBATCH --array=0-2%2\n")]
    done = bench("continue", "runs", "--wait", "--interval", "1", cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr + task_logs(tmp_path)
    status = bench("status", "runs", cwd=tmp_path, env=env).stdout
    assert "call.error appeared (job 4242_2): RuntimeError: size 3 does not fit" in status, status
    shown = bench("result", "runs", "--format", "csv", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert [(r["size"], r["rate[items/s]"], r["status"]) for r in rows[:2]] == [
        ("1", "1.5", "done"), ("2", "3.0", "done")]
    # the failed row carries the exception's last line (issue 37)
    assert rows[2]["size"] == "3" and rows[2]["status"].startswith("failed (error file ")
    assert rows[2]["status"].endswith("call.error appeared (job 4242_2): RuntimeError: size 3 does not fit)")
    array = tmp_path / "runs" / "000000" / ".caramel_arrays" / "run.0"
    assert (array / "job_id").read_text() == "4242\n" and len((array / "tasks").read_text().splitlines()) == 3
    script = next((array / "submitit").glob("*/*_submission.sh")).read_text()
    assert "#SBATCH --partition=debug\n" in script and "#SBATCH --time=5\n" in script
    assert not list((tmp_path / "runs" / "000000").glob("*/work/submitit"))  # nothing pickled per work folder


def test_array_on_a_call_step_is_accepted_and_on_a_plain_step_refused(tmp_path):
    env = fake_slurm(tmp_path)
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "b.yaml").write_text(BENCH.format(array=4))
    assert bench("plan", "b.yaml", cwd=tmp_path, env=env).returncode == 0
    (tmp_path / "b.yaml").write_text(BENCH.format(array=4).replace("    call: functions:measure\n", "    do: echo\n")
                                     .replace("    figure: [{name: rate, unit: items/s}]\n", ""))
    refused = bench("plan", "b.yaml", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "b.yaml:8: array= on a step that is not submitted" in refused.stderr


def test_a_call_batch_larger_than_the_sites_arrays_is_split(tmp_path):
    env = fake_slurm(tmp_path)
    with open(tmp_path / "systems" / "fakeslurm.yaml", "a") as handle:
        handle.write("max_array_size: 2\n")
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "b.yaml").write_text(BENCH.format(array="true"))
    started = bench("run", "b.yaml", "--tag", "fakeslurm", "--systems", "systems", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    assert sorted((p.name, p.read_text()) for p in (tmp_path / "jobs").iterdir()) == [
        ("4242", "#SBATCH --array=0-1%2\n"), ("4243", "")]  # a batch of one is one job
    ids = bench("status", "runs", "--format", "json", cwd=tmp_path, env=env).stdout
    assert '"4242_0"' in ids and '"4242_1"' in ids and '"4243"' in ids
    (tmp_path / "b.yaml").write_text(BENCH.format(array=2))  # at most 2 at once cannot be split
    refused = bench("run", "b.yaml", "--tag", "fakeslurm", "--systems", "systems", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "MaxArraySize" in refused.stderr and "Traceback" not in refused.stderr
