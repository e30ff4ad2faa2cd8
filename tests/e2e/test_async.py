"""Asynchronous do's: a missing done file leaves the workpackage waiting; `bench continue` moves on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.run_bench import bench

ASYNC = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="async" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2,3</parameter></parameterset>
    <step name="submit" max_async="$max">
      <use>p</use>
      <use>limits</use>
      <do>export JOB=job$n</do>
      <do done_file="ready" error_file="failed">echo "submitted $$JOB"</do>
      <do>echo "after the job: $$JOB"</do>
    </step>
    <step name="post" depend="submit">
      <do>cat submit/stdout</do>
    </step>
    <parameterset name="limits"><parameter name="max" type="int">0</parameter></parameterset>
  </benchmark>
</jube>
"""


def states(cwd: Path, env: dict[str, str]) -> dict[int, str]:
    doc = json.loads(bench("status", "--format", "json", cwd=cwd, env=env).stdout)
    return {wp["id"]: wp["state"] for wp in doc["workpackages"]}


def work(cwd: Path, wp: int, step: str) -> Path:
    return cwd / "runs" / "000000" / f"{wp:06d}_{step}" / "work"


@pytest.mark.slow
def test_done_file_then_continue_from_the_same_folder(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "async.xml").write_text(ASYNC)
    proc = bench("run", "async.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "waiting" in proc.stdout and "bench continue" in proc.stdout
    assert states(tmp_path, env) == {0: "waiting", 1: "waiting", 2: "waiting", 3: "open", 4: "open", 5: "open"}
    status = bench("status", cwd=tmp_path, env=env).stdout
    assert "0 (submit): waits for ready" in status

    (work(tmp_path, 1, "submit") / "ready").touch()
    (work(tmp_path, 2, "submit") / "failed").touch()
    proc = bench("continue", "-i", "last", cwd=tmp_path, env=env)  # no folder: the run started here
    assert proc.returncode == 1  # one failed
    assert states(tmp_path, env) == {0: "waiting", 1: "done", 2: "failed", 3: "open", 4: "done", 5: "cancelled"}
    # the environment exported before the job is there after it
    assert (work(tmp_path, 1, "submit") / "stdout").read_text() == "submitted job2\nafter the job: job2\n"
    assert (work(tmp_path, 4, "post") / "stdout").read_text() == "submitted job2\nafter the job: job2\n"
    assert "error file" in bench("status", cwd=tmp_path, env=env).stdout

    (work(tmp_path, 0, "submit") / "ready").touch()
    proc = bench("continue", "runs", "-i", "0", cwd=tmp_path, env=env)
    assert states(tmp_path, env)[3] == "done"
    log = json.loads(bench("log", "-w", "0", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert [(c["do"], c["exit_code"]) for c in log] == [(1, 0), (2, 0), (3, 0)]


def test_timeout_fails_a_workpackage_without_done_file(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "async.xml").write_text(ASYNC)
    bench("run", "async.xml", "--wait-limit", "0.5", cwd=tmp_path, env=env)
    time.sleep(0.6)
    proc = bench("continue", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert set(states(tmp_path, env).values()) == {"failed", "cancelled"}
    assert "timed out: no done file" in proc.stdout


def test_max_async_holds_back_new_workpackages(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "async.xml").write_text(ASYNC.replace('"max" type="int">0', '"max" type="int">1'))
    bench("run", "async.xml", cwd=tmp_path, env=env)
    assert states(tmp_path, env) == {0: "waiting", 1: "open", 2: "open", 3: "open", 4: "open", 5: "open"}
    (work(tmp_path, 0, "submit") / "ready").touch()
    bench("continue", cwd=tmp_path, env=env)
    assert states(tmp_path, env) == {0: "done", 1: "waiting", 2: "open", 3: "done", 4: "open", 5: "open"}
