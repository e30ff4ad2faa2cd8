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


LOCAL = """name: steps
outpath: steps_run
meta:
  progress: "step $jube_pat_int of $jube_pat_int"
  progress_file: job.out
step:
  name: train
  do: "for i in 1 2 3 4; do echo \\"step $$i of 4\\" >> job.out; sleep 1; done"
"""


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """`bench ARGS` with a pseudo-terminal as its output (as a user's shell gives it): its exit
    code and what it drew, escape sequences removed."""
    import os
    import pty
    import re
    import subprocess
    import sys

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "caramel", *args], cwd=cwd, env=env, stdout=follower, stderr=follower
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    code = proc.wait(timeout=120)
    text = b"".join(chunks).decode(errors="replace")
    return code, re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)


def test_a_run_on_a_terminal_shows_the_running_workpackages_iterations(tmp_path: Path) -> None:
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    (tmp_path / "steps.yaml").write_text(LOCAL)
    code, drawn = _on_a_terminal(["run", "steps.yaml"], tmp_path, env)
    assert code == 0, drawn
    assert "000000_train: " in drawn and "/4 iterations" in drawn
    assert "its table: bench result -i last" in drawn
    quiet = bench("run", "steps.yaml", cwd=tmp_path, env=env)  # a pipe: no progress at all
    assert "iterations" not in quiet.stdout + quiet.stderr
