"""A call: step on a SLURM system, with SLURM faked (sbatch starts the job script in the background,
srun runs its command): submitit's SlurmExecutor submits, the workpackage waits for the payload's
done file like a submit step's, and a function that raised fails with the exception's last line.
The same on the real test cluster: tests/backends/test_call_localcluster.py."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from tests.run_bench import bench, isolated_env

SBATCH = """#!/bin/sh
mkdir -p "{jobs}"; id=$((4242 + $(ls "{jobs}" | wc -l))); touch "{jobs}/$id"
(setsid env SLURM_JOB_ID=$id SLURM_NTASKS=1 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 \\
  SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=localhost bash "$1" >/dev/null 2>&1 &)
echo "Submitted batch job $id"
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
    parameter: [{name: size, type: int, _: "1,2,3"}]
step:
  - name: run
    use: p
    call: functions:measure
    figure: [{name: rate, unit: items/s}]
"""


def fake_slurm(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "bin"
    fake.mkdir()
    scripts = {"sbatch": SBATCH.format(jobs=tmp_path / "jobs"), "srun": SRUN, "sacct": "#!/bin/sh\nexit 0\n",
               "scancel": "#!/bin/sh\nexit 0\n", "scontrol": "#!/bin/sh\necho localhost\n"}
    for name, text in scripts.items():
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "fakeslurm.yaml").write_text(
        "scheduler: slurm\npartition: debug\naccount: team\ntime_limit: '00:05:00'\n")
    return isolated_env(tmp_path, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}",
                        CARAMEL_HISTORY=str(tmp_path / "history.db"))


def test_a_call_step_goes_to_slurm_through_submitit_and_is_followed_like_a_job(tmp_path):
    env = fake_slurm(tmp_path)
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "b.yaml").write_text(BENCH)
    started = bench("run", "b.yaml", "--tag", "fakeslurm", "--systems", "systems", cwd=tmp_path, env=env)
    assert "Submitted batch job" not in started.stderr, started.stderr
    assert sorted(p.name for p in (tmp_path / "jobs").iterdir()) == ["4242", "4243", "4244"]  # one job each
    done = bench("continue", "runs", "--wait", "--interval", "1", cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr  # the raising one
    status = bench("status", "runs", cwd=tmp_path, env=env).stdout
    assert "call.error appeared (job 4244): RuntimeError: size 3 does not fit" in status, status
    shown = bench("result", "runs", "--style", "csv", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert [(r["size"], r["rate[items/s]"], r["status"]) for r in rows] == [
        ("1", "1.5", "done"), ("2", "3.0", "done"), ("3", "", "failed")]
    script = next((tmp_path / "runs" / "000000" / "000000_run" / "work" / "submitit").glob("*/*_submission.sh"))
    assert "#SBATCH --partition=debug\n" in script.read_text() and "#SBATCH --time=5\n" in script.read_text()
