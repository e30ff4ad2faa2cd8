"""The progress a job's log shows while `bench continue --wait` follows it (issue 37): a step whose
do starts a job in the background (as sbatch does) and waits for its done file."""

from __future__ import annotations

from pathlib import Path

from tests.run_bench import bench, isolated_env

BENCH = """name: slow
outpath: slow_run
meta:
  progress: "step $jube_pat_int of $jube_pat_int"
  progress_file: job.out
step:
  name: train
  do:
    done_file: ready
    _: >-
      (for i in 1 2 3 4 5 6; do echo "step $$i of 6"; sleep 1; done > job.out; touch ready)
      > /dev/null 2>&1 &
"""


def test_continue_wait_shows_the_waiting_jobs_iterations(tmp_path: Path) -> None:
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    (tmp_path / "slow.yaml").write_text(BENCH)
    ran = bench("run", "slow.yaml", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "go on with: bench continue -i last" in ran.stdout  # it waits for its done file
    went = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=tmp_path, env=env)
    assert went.returncode == 0, went.stderr
    assert "  000000_train: " in went.stderr and " of 6" not in went.stderr
    assert "/6 iterations" in went.stderr
    assert "its table: bench result -i last" in went.stdout
