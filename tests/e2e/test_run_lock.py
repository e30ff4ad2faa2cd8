"""`rm -f *.lock` during a run does not let a second bench in: it still refuses, naming the holder."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.run_bench import bench

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

SLEEPY = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="sleepy" outpath="runs">
    <step name="s"><do>touch $jube_benchmark_home/began; sleep 4; echo x >> $jube_benchmark_home/ran.txt</do></step>
  </benchmark>
</jube>
"""


def test_an_unlinked_lock_file_does_not_free_a_running_run(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "sleepy.xml").write_text(SLEEPY)
    first = subprocess.Popen([sys.executable, "-m", "caramel", "run", "sleepy.xml"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "began").exists():
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.05)
    for lock in (tmp_path / "runs" / "000000").glob("*.lock"):
        lock.unlink()  # what a cleanup's `rm -f *.lock` does
    second = bench("continue", "-i", "last", cwd=tmp_path, env=env)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    assert second.returncode == 2 and "is busy" in second.stderr and f"pid {first.pid}" in second.stderr
    assert (tmp_path / "ran.txt").read_text() == "x\n"  # the do ran once
