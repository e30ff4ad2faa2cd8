"""Job arrays and dependency chains against the real test cluster (tests/cluster/localcluster.sh): one
sbatch for 40 workpackages, each task's end recorded with SLURM's reason, the same table as one job
each; a chain of three submit steps queued by one `bench run`, cancelled by SLURM when its first fails."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

from tests.run_bench import bench

SWEEP = """name: sweep
outpath: runs
parameterset:
  - name: p
    parameter: {{name: i, type: int, _: "{values}"}}
step:
  - name: task
    use: p
    submit: true
    array: {array}
    do: 'echo "value $i"; if [ $i -eq 7 ]; then sleep 300; fi; test $i -ne 11 -a $i -ne 29'
patternset:
  - name: pat
    pattern: {{name: v, type: int, _: 'value $jube_pat_int'}}
analyser:
  - name: an
    use: pat
    analyse: {{step: task, file: job.out}}
result:
  - use: an
    table: {{name: t, style: csv, column: [i, v]}}
"""

CHAIN = """name: chain
outpath: runs
step:
  - {name: one, submit: true, do: 'sleep 4; exit 5'}
  - {name: two, depend: one, submit: true, do: 'echo two'}
  - {name: three, depend: two, submit: true, do: 'echo three'}
"""


def status(cwd: Path, env: dict[str, str]) -> list[dict]:
    done = bench("status", "-i", "last", "--format", "json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["workpackages"]


def slurm(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=30).stdout


def sweep(env: dict[str, str], cwd: Path, array: str) -> tuple[list[dict], str]:
    """Run the 40-workpackage sweep; cancel task 7 (it sleeps) with scancel; the states and the table."""
    cwd.mkdir()
    (cwd / "s.yaml").write_text(SWEEP.format(values=",".join(map(str, range(40))), array=array))
    started = bench("run", "s.yaml", "--tag", "localcluster", cwd=cwd, env=env)
    assert started.returncode in (0, 1), started.stderr  # one job each: some may have failed by then
    seventh = status(cwd, env)[7]["job_id"]
    for _ in range(60):  # cancel it once it runs, so its job.out has its value
        if "value 7" in (cwd / "runs/000000/000007_task/work/job.out").read_text(errors="replace") \
                if (cwd / "runs/000000/000007_task/work/job.out").exists() else False:
            break
        time.sleep(0.5)
    slurm(env, "scancel", seventh)
    followed = bench("continue", "-i", "last", "--wait", cwd=cwd, env=env, timeout=300)
    assert followed.returncode == 1, followed.stdout + followed.stderr  # failures: exit 1
    table = bench("result", "-i", "last", cwd=cwd, env=env)
    assert table.returncode == 0, table.stderr
    return status(cwd, env), table.stdout


def test_forty_workpackages_are_one_array_with_each_tasks_reason(env, tmp_path):
    env = dict(env, CARAMEL_SCHEDULER_LOG=str(tmp_path / "calls.log"))
    wps, table = sweep(env, tmp_path / "array", "true")
    sbatch = [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.split()[1] == "sbatch"]
    assert len(sbatch) == 1  # one sbatch for the 40
    array = wps[0]["job_id"].split("_")[0]
    assert [wp["job_id"] for wp in wps] == [f"{array}_{i}" for i in range(40)]
    assert len(slurm(env, "sacct", "-X", "-n", "-P", "-o", "JobID", "-j", array).split()) == 40
    bad = {wp["id"]: (wp["state"], wp["reason"]) for wp in wps if wp["state"] != "done"}
    assert bad == {11: ("failed", f"job {array}_11 ended without writing caramel.done: FAILED (exit 1)"),
                   29: ("failed", f"job {array}_29 ended without writing caramel.done: FAILED (exit 1)"),
                   7: ("failed", f"job {array}_7 ended without writing caramel.done: CANCELLED")}
    # the same sweep, one job each: the same table
    single_wps, single_table = sweep(env, tmp_path / "single", "false")
    assert {wp["id"]: wp["state"] for wp in single_wps} == {wp["id"]: wp["state"] for wp in wps}
    # the same table but for the job ids the failed rows' reasons name (an array task's, a job's)
    def masked(text: str) -> str:
        return re.sub(r"job \S+ ended", "job ID ended", text)

    assert masked(single_table) == masked(table)
    assert "11,11,failed (job" in table and "12,12,done" in table


def test_a_chain_is_queued_at_once_and_cancelled_by_slurm_when_its_first_fails(env, tmp_path):
    (tmp_path / "c.yaml").write_text(CHAIN)
    started = bench("run", "c.yaml", "--tag", "localcluster", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stderr
    jobs = [wp["job_id"] for wp in status(tmp_path, env)]
    queued = slurm(env, "squeue", "-h", "-o", "%i", "-j", ",".join(jobs)).split()
    assert sorted(queued) == sorted(jobs)  # all three in the queue while the first still runs
    followed = bench("continue", "-i", "last", "--wait", cwd=tmp_path, env=env, timeout=200)
    assert followed.returncode == 1, followed.stdout + followed.stderr
    one, two, three = status(tmp_path, env)
    assert one["state"] == "failed" and "FAILED (exit 5)" in one["reason"]
    assert (two["state"], three["state"]) == ("cancelled", "cancelled")
    # SLURM's words; a loaded slurmctld's accounting may not have its reason yet in the poll that sees
    # the parent failed and the dependant CANCELLED: then caramel's (engine.waiting._orphans)
    assert two["reason"] in (f"not run: job {jobs[1]} CANCELLED: Dependency (workpackage 0 (one) failed)",
                             f"not run: job {jobs[1]} cancelled: workpackage 0 (one) failed")
    assert three["reason"].startswith((f"not run: job {jobs[2]} CANCELLED: Dependency",
                                       f"not run: job {jobs[2]} cancelled: workpackage 1 (two)"))
