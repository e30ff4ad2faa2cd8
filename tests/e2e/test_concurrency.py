"""Two `bench` on one run at once: the second says the run is busy (or waits with --lock-wait); the
state stays consistent and every workpackage runs once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.run_bench import bench

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

# the first continue holds the run for 4 x 1.5 s: long enough for the second bench to start and find
# it busy on a loaded machine (0.2 s each lost that race under three parallel test workers)
SLOW = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="slow" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2,3,4</parameter></parameterset>
    <step name="submit">
      <use>p</use>
      <do done_file="ready">echo submitted</do>
      <do>sleep 1.5; echo "$jube_wp_id" >> $jube_benchmark_home/counter.txt</do>
    </step>
  </benchmark>
</jube>
"""


def test_two_continues_at_once(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "slow.xml").write_text(SLOW)
    assert bench("run", "slow.xml", cwd=tmp_path, env=env).returncode == 0
    for work in (tmp_path / "runs" / "000000").glob("*/work"):
        (work / "ready").touch()
    cmd = [sys.executable, "-m", "caramel", "continue", "-i", "last"]
    first = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = tmp_path / "runs" / "000000" / "caramel.lock"
    deadline = time.monotonic() + 20
    while f"pid {first.pid}" not in (lock.read_text() if lock.exists() else ""):  # first holds the run
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    second = bench("continue", "-i", "last", cwd=tmp_path, env=env)
    third = subprocess.Popen(cmd + ["--lock-wait", "30"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    out, err = first.communicate(timeout=30)
    assert first.returncode == 0, out + err
    assert second.returncode == 2 and "is busy" in second.stderr and f"pid {first.pid}" in second.stderr
    out, err = third.communicate(timeout=30)
    assert third.returncode == 0 and "4 done" in out  # it waited, then found nothing left to do
    counts = Counter((tmp_path / "counter.txt").read_text().split())
    assert counts == {"0": 1, "1": 1, "2": 1, "3": 1}
    doc = json.loads(bench("status", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert [(wp["state"], wp["attempt"]) for wp in doc["workpackages"]] == [("done", 1)] * 4


MANY = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="many" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">{values}</parameter></parameterset>
    <step name="s"><use>p</use><do>echo "$jube_benchmark_id $n" >> $jube_benchmark_home/ids.txt</do></step>
  </benchmark>
</jube>
"""


def _runs_at_once(tmp_path: Path, env: dict[str, str], count: int, n: int) -> None:
    """`count` bench run of an `n`-workpackage file into one outpath, started together: all succeed,
    each with its own id, each workpackage ran once in its own run."""
    (tmp_path / "many.xml").write_text(MANY.format(values=",".join(map(str, range(n)))))
    cmd = [sys.executable, "-m", "caramel", "run", "-q", "many.xml"]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(count)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [f"{i:06d}" for i in range(count)]
    seen = Counter(tuple(line.split()) for line in (tmp_path / "ids.txt").read_text().splitlines())
    assert seen == Counter({(str(run), str(k)): 1 for run in range(count) for k in range(n)})


def test_six_runs_at_once_into_one_outpath_get_distinct_ids(tmp_path: Path, env: dict[str, str]) -> None:
    _runs_at_once(tmp_path, env, 6, 5)


def test_two_runs_of_a_thousand_workpackages_at_the_same_moment(tmp_path: Path, env: dict[str, str]) -> None:
    _runs_at_once(tmp_path, env, 2, 1000)
