"""Suites end to end (issue 14): tags select benchmarks, a campaign runs them, a hanging one is
killed at its time limit with nothing left behind, perf.csv in MAD's shape, copies side by side,
and the methodology table against targets."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.cli.campaign import MADENGINE_COLUMNS


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"), CARAMEL_KILL_GRACE="1")


def write_zoo(folder: Path, marker: str) -> None:
    """Three tagged benchmarks: a MAD-style one, one that hangs (it ignores SIGTERM), one of another tag."""
    folder.mkdir()
    (folder / "mad.yaml").write_text(
        "name: mad\noutpath: mad_runs\nmeta: {tags: [smoke, cpu], time_limit: 60}\n"
        "step:\n  name: run\n  do: 'echo warm-up; echo \"performance: 3.0637 examples/sec\"'\n")
    (folder / "hang.yaml").write_text(
        "name: hang\noutpath: hang_runs\nmeta: {tags: [smoke], time_limit: 2}\n"
        f"step:\n  name: run\n  do: \"trap '' TERM; {marker} & {marker}\"\n")
    (folder / "other.yaml").write_text(
        "name: other\noutpath: other_runs\nmeta: {tags: [gpu-only]}\n"
        "step:\n  name: run\n  do: 'echo \"performance: 99 examples/sec\"'\n")


def processes_with(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and " Z" not in line and "ps -eo" not in line]


@pytest.mark.slow
def test_suite_campaign_time_limit_result_and_perf_csv(tmp_path: Path, env: dict[str, str]) -> None:
    marker = f"sleep {300000 + uuid.uuid4().int % 99999}"  # a duration no other process uses
    write_zoo(tmp_path / "zoo", marker)
    listed = bench("list", "--tag", "smoke", "--benchmarks", "zoo", "--format", "json", cwd=tmp_path, env=env)
    if listed.returncode != 0:  # bench list takes folders as arguments
        listed = bench("list", "--tag", "smoke", "zoo", "--format", "json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert sorted(e["name"] for e in json.loads(listed.stdout)) == ["hang", "mad"]

    ran = bench("run", "--suite", "smoke", "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "timed out after 2 s" in ran.stdout
    assert re.search(r"campaign \S+: 2 benchmark\(s\): hang, mad", ran.stdout)
    assert processes_with(marker) == []  # the trap ignored SIGTERM: SIGKILL ended the group

    status = bench("status", "-c", "last", cwd=tmp_path, env=env)
    assert status.stdout.count("== ") == 2 and "timed out after 2 s" in status.stdout

    result = bench("result", "-c", "last", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "examples/sec:" in result.stdout and "3.0637" in result.stdout  # the combined table
    assert "mad_runs/000000" in result.stdout and "hang_runs/000000" in result.stdout  # each run's own tables
    with open(tmp_path / "perf.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:len(MADENGINE_COLUMNS)] == MADENGINE_COLUMNS  # madengine's columns, in its order
    by_model = {r["model"]: r for r in rows}
    assert by_model["mad"]["performance"] == "3.0637" and by_model["mad"]["metric"] == "examples/sec"
    assert by_model["mad"]["status"] == "SUCCESS" and by_model["mad"]["system"] == "local"
    assert "smoke" in by_model["mad"]["tags"].split(",")  # comma-separated, as madengine writes them
    hang = [r for r in rows if r["benchmark"] == "hang"]
    assert hang and hang[0]["status"] == "FAILURE" and "timed out after 2 s" in hang[0]["reason"]

    # the methodology table: a target 30 % above the measured mean fails, 30 % below passes
    (tmp_path / "high.json").write_text(json.dumps({"mad": 3.0637 * 1.3}))
    (tmp_path / "low.json").write_text(json.dumps({"mad": 3.0637 * 0.7}))
    high = bench("compare", "-c", "last", "--targets", "high.json", cwd=tmp_path, env=env)
    assert high.returncode == 1, high.stdout + high.stderr
    assert "deviation quantile (80%)" in high.stdout and "mean performance diff" in high.stdout
    assert "-23.08%" in high.stdout
    low = bench("compare", "-c", "last", "--targets", "low.json", "--format", "json", cwd=tmp_path, env=env)
    doc = json.loads(low.stdout)
    assert doc["benchmarks"][0]["passed"] and round(doc["benchmarks"][0]["diff_pct"]) == 43
    # one sample: no spread, so the deviation criterion cannot be judged and the campaign does not pass
    assert doc["benchmarks"][0]["sd"] is None and doc["criteria"][1]["passed"] is None
    assert low.returncode == 1 and not doc["passed"], low.stdout + low.stderr


def test_tag_selecting_nothing_names_the_tags(tmp_path: Path, env: dict[str, str]) -> None:
    write_zoo(tmp_path / "zoo", "sleep 1")
    out = bench("run", "--suite", "smok", "--benchmarks", "zoo", "--tag", "local", cwd=tmp_path, env=env)
    assert out.returncode == 2
    assert "did you mean 'smoke'?" in out.stderr and "gpu-only" in out.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two copies need two cores")
@pytest.mark.slow
def test_two_copies_run_at_once_each_on_its_core(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "copies.yaml").write_text(
        "name: copies\noutpath: runs\nstep:\n  name: run\n  copies: 2\n"
        "  do: 'python3 -c \"import os,time; print(\\\"start\\\", time.time(), os.sched_getaffinity(0)); "
        "time.sleep(1.5); print(\\\"end\\\", time.time())\"; echo \"performance: $((10 + CARAMEL_COPY)) img/s\"'\n")
    ran = bench("run", "copies.yaml", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    spans, cores = [], []
    for k in (0, 1):
        text = (tmp_path / "runs" / "000000" / f"00000{k}_run" / "work" / "stdout").read_text()
        start = re.search(r"start (\S+) (\{.*\})", text)
        spans.append((float(start.group(1)), float(re.search(r"end (\S+)", text).group(1))))
        cores.append(start.group(2))
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]  # they overlapped
    assert len(set(cores)) == 2 and all(len(eval(c)) == 1 for c in cores)  # noqa: S307 - a set literal we printed
    result = bench("result", "-i", "last", "--format", "csv", cwd=tmp_path, env=env)
    lines = result.stdout.splitlines()
    # "done", with a flag when the node was loaded (the load average above the cores) at a copy's start or end
    assert any(line.startswith("copies,0,10.0,img/s,done") for line in lines)
    assert any(line.startswith("copies,1,11.0,img/s,done") for line in lines)
    assert any(line.startswith("copies,sum,21.0,img/s,done (sum of 2 copies") for line in lines)
    assert not any(line.startswith("copies,mean,") for line in lines)  # the declared aggregate only
    assert "copies,sd,0.7071067811865476,img/s,spread: sd of 2 copies" in lines
    assert "copies,sem,0.5,img/s,spread: sem of 2 copies" in lines


@pytest.mark.slow
def test_bad_timeout_copies_and_performance_line(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "bad.yaml").write_text("name: bad\noutpath: runs\nstep:\n  name: run\n  timeout: soon\n  do: echo\n")
    out = bench("run", "bad.yaml", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "bad.yaml:4" in out.stderr and "'soon' is not a time limit" in out.stderr
    (tmp_path / "many.yaml").write_text("name: many\noutpath: runs\nstep:\n  name: run\n  copies: 999\n  do: echo\n")
    out = bench("run", "many.yaml", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "many.yaml:4" in out.stderr
    assert f"the {len(os.sched_getaffinity(0))} core(s)" in out.stderr
    (tmp_path / "zero.yaml").write_text("name: zero\noutpath: runs\nstep:\n  name: run\n  copies: 0\n  do: echo\n")
    out = bench("run", "zero.yaml", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "zero.yaml:4" in out.stderr and "copies='0'" in out.stderr
    (tmp_path / "nan.yaml").write_text(
        "name: nan\noutpath: runs\nstep:\n  name: run\n  do: 'echo \"performance: fast img/s\"'\n")
    assert bench("run", "nan.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    out = bench("result", "-i", "last", cwd=tmp_path, env=env)
    # the line, its file and line, the form expected (madengine's deployment/base.py pattern)
    assert re.search(r"workpackage 0 \(run\): \S+stdout:1: 'performance: fast img/s' does not "
                     r"read as madengine's 'performance: NUMBER METRIC'", out.stderr), out.stderr


@pytest.mark.slow
def test_time_limit_option_overrides_and_zero_means_none(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "slow.yaml").write_text(
        "name: slow\noutpath: runs\nstep:\n  name: run\n  timeout: '00:00:01'\n  do: 'sleep 2; echo \"performance: 1 x/s\"'\n")
    out = bench("run", "slow.yaml", "-q", cwd=tmp_path, env=env)
    assert out.returncode == 1 and "timed out after 1 s" in out.stdout
    out = bench("run", "slow.yaml", "-q", "--time-limit", "0", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="matmul_users runs two copies, one per core")
@pytest.mark.slow
def test_shipped_cpu_smoke_suite_runs_here(tmp_path: Path, env: dict[str, str]) -> None:
    """The shipped `cpu-smoke` suite: GPT and ResNet trainers in two sizes and two users at once."""
    listed = bench("list", "--tag", "cpu-smoke", "--format", "json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"] for entry in json.loads(listed.stdout)}
    assert names == {"gpt_smoke", "resnet_smoke", "matmul_users"}
    ran = bench("run", "--suite", "cpu-smoke", "--tag", "local", cwd=tmp_path, env=env, timeout=280)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = bench("result", "-c", "last", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "perf.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    by_metric: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        assert row["status"] == "SUCCESS", row
        assert float(row["performance"]) > 0, row
        by_metric.setdefault(row["metric"], []).append(row)
    assert len(by_metric["tokens/s"]) == 2 and len(by_metric["images/s"]) == 2
    copies = {row["model"] for row in by_metric["GFLOP/s"]}
    assert {"matmul_users[caramel_copy=0]", "matmul_users[caramel_copy=1]",
            "matmul_users[caramel_copy=sum]"} <= copies
    # runs of shipped benchmarks go under the current folder, never into the package
    assert (tmp_path / "gpt_smoke_run").is_dir() and (tmp_path / "matmul_users_run").is_dir()
