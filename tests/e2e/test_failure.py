"""A failing do: its workpackage fails with exit code and command, dependants are not run, the
others go on, `bench run` exits non-zero with a summary; `bench remove` + `continue` redoes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

FAIL = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="fail" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2,3</parameter></parameterset>
    <step name="compute">
      <use>p</use>
      <do>echo "compute $n"</do>
      <do>if [ $n = 2 ] &amp;&amp; [ ! -e $jube_benchmark_home/fixed ]; then echo "n=2 is broken" >&amp;2; exit 7; fi</do>
    </step>
    <step name="report" depend="compute">
      <do>echo "report $n"</do>
    </step>
    <step name="final" depend="report"><do>echo final $n</do></step>
  </benchmark>
</jube>
"""


def doc(cwd: Path, env: dict[str, str]) -> dict:
    return json.loads(bench("status", "--format", "json", cwd=cwd, env=env).stdout)


def test_failure_is_recorded_and_stops_only_its_dependants(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "fail.xml").write_text(FAIL)
    proc = bench("run", "fail.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "1 failed" in proc.stdout and "2 cancelled" in proc.stdout
    assert "do 2 exited with 7: if [ 2 = 2 ]" in proc.stdout and "n=2 is broken" in proc.stdout
    wps = {wp["id"]: wp for wp in doc(tmp_path, env)["workpackages"]}
    failed = [wp for wp in wps.values() if wp["state"] == "failed"]
    assert len(failed) == 1 and failed[0]["exit_code"] == 7 and failed[0]["step"] == "compute"
    assert sorted(wp["step"] for wp in wps.values() if wp["state"] == "cancelled") == ["final", "report"]
    assert sum(wp["state"] == "done" for wp in wps.values()) == 6  # the other two chains ran to the end
    log = json.loads(bench("log", "--failed", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert [(c["wp"], c["do"], c["exit_code"]) for c in log] == [(failed[0]["id"], 2, 7)]

    # fix the cause, remove the failed workpackage (its dependants go with it), continue
    (tmp_path / "fixed").touch()
    proc = bench("remove", "-f", "-w", str(failed[0]["id"]), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "runs" / "000000" / f"{failed[0]['id']:06d}_compute").exists()
    proc = bench("continue", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout
    assert {wp["state"] for wp in doc(tmp_path, env)["workpackages"]} == {"done"}


@pytest.mark.slow
def test_remove_a_done_workpackage_redoes_it_and_its_dependants(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "fail.xml").write_text(FAIL)
    (tmp_path / "fixed").touch()
    assert bench("run", "fail.xml", cwd=tmp_path, env=env).returncode == 0
    before = {wp["id"]: wp["attempt"] for wp in doc(tmp_path, env)["workpackages"]}
    proc = bench("remove", "runs", "-i", "last", "-w", "0", "-f", cwd=tmp_path, env=env)
    assert "removed workpackages 0, 3, 6" in proc.stdout
    assert bench("continue", cwd=tmp_path, env=env).returncode == 0
    after = {wp["id"]: wp["attempt"] for wp in doc(tmp_path, env)["workpackages"]}
    assert {i for i in after if after[i] != before[i]} == {0, 3, 6}

    proc = bench("remove", "-f", cwd=tmp_path, env=env)  # the whole run
    assert proc.returncode == 0 and not (tmp_path / "runs" / "000000").exists()
    proc = bench("status", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "no run was started" in proc.stderr
