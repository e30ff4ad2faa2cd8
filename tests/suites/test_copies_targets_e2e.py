"""Copies and references end to end (issue 21): a script printing several `performance:` lines per
copy gives one figure per copy and the declared aggregate over the copies (never the sum of every
line), and `bench compare --targets` judges only each benchmark's result, against the references of
the system the run ran on, with asymmetric tolerances; a benchmark or system without one is reported."""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two copies need two cores")

# copy k prints 10+k, 11+k, ..., 14+k: its own figure is 12+k; the sum over 2 copies is 25 (never 125)
POOLED = [10 + i + k for k in (0, 1) for i in range(5)]  # the 10 lines of the 2 copies
LINES = """name: {name}
outpath: {name}_runs
meta: {{tags: [copies]}}
step:
  name: run
  copies: 2
{extra}  do: 'for i in 0 1 2 3 4; do echo "performance: $((10 + i + CARAMEL_COPY)) img/s"; done'
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def rows_of(out: str) -> dict[str, dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(out)))
    assert all(None not in row for row in rows), out  # no status holds the separator (csv is unquoted)
    return {row["caramel_copy"]: row for row in rows}


@pytest.mark.slow
def test_copies_give_one_figure_each_and_the_declared_aggregate(tmp_path: Path, env: dict[str, str]) -> None:
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "users.yaml").write_text(LINES.format(name="users", extra=""))
    (zoo / "devices.yaml").write_text(LINES.format(name="devices", extra="  copies_aggregate: mean\n"))
    ran = bench("run", "--suite", "copies", "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = bench("result", "-i", "last", "users_runs", "--format", "csv", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    rows = rows_of(result.stdout)
    assert float(rows["0"]["performance"]) == 12.0 and float(rows["1"]["performance"]) == 13.0
    assert rows["0"]["status"].startswith("done (mean of 5 lines")
    assert float(rows["sum"]["performance"]) == 25.0 and "sum of 2 copies" in rows["sum"]["status"]
    assert "mean" not in rows  # only the declared aggregate
    # the spread is the pooled lines' (issue 34, as milabench's std% over all its GPUs' samples), no longer
    # the 2 copies' figures'
    assert rows["sd"]["status"] == "spread: sd of 10 lines of 2 copies"
    assert rows["sem"]["status"] == "spread: sem of 10 lines of 2 copies"
    assert float(rows["sd"]["performance"]) == pytest.approx(statistics.stdev(POOLED))
    assert "estimator: mean of all samples, sd ddof=1" in result.stderr  # csv keeps its shape: caption on stderr
    pretty = bench("result", "-i", "last", "users_runs", cwd=tmp_path, env=env)
    assert "estimator: mean of all samples, sd ddof=1" in pretty.stdout
    if os.path.exists("/proc/loadavg"):  # the engine kept the node's load at each copy's start and end
        events = bench("log", "-i", "last", "users_runs", "--events", cwd=tmp_path, env=env).stdout
        assert events.count("loadavg: start") == 2 and events.count("loadavg: end") == 2, events
    mean = rows_of(bench("result", "-i", "last", "devices_runs", "--format", "csv", cwd=tmp_path, env=env).stdout)
    assert float(mean["mean"]["performance"]) == 12.5 and "sum" not in mean

    # this system's (local) references, asymmetric; sd/sem rows and single copies are never judged
    (tmp_path / "targets.yaml").write_text(
        "systems:\n"
        "  local:\n"
        "    users: {value: 24, lower: -5%, upper: +10%}     # 25 lies in [22.8, 26.4]\n"
        "    devices: [12, -0.01, 0.01]                     # 12.5 is above 12.12\n"
        "  JEDI:\n"
        "    users: 1000\n")
    out = bench("compare", "-c", "last", "--targets", "targets.yaml", "--format", "json", cwd=tmp_path, env=env)
    doc = json.loads(out.stdout)
    assert doc["system"] == "local"
    assert sorted((b["name"], b["verdict"]) for b in doc["benchmarks"]) == [("devices", "fail"), ("users", "pass")]
    users = next(b for b in doc["benchmarks"] if b["name"] == "users")
    assert users["result"] == 25.0 and users["low"] == pytest.approx(22.8) and users["high"] == pytest.approx(26.4)
    # one run of 2 copies: judged on the 10 pooled lines (issue 34: it was n = 1, no spread, before)
    assert users["n"] == 10 and users["sd"] == pytest.approx(statistics.stdev(POOLED))
    assert users["sd_pct"] == pytest.approx(100 * statistics.stdev(POOLED) / statistics.mean(POOLED))
    assert out.returncode == 1
    table = bench("compare", "-c", "last", "--targets", "targets.yaml", cwd=tmp_path, env=env)
    assert "outside [11.88, 12.12]" in table.stdout and "estimator: mean of all samples, sd ddof=1" in table.stdout


@pytest.mark.slow
def test_a_system_without_references_is_reported_never_passed(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "users.yaml").write_text(LINES.format(name="users", extra=""))
    assert bench("run", "users.yaml", "--tag", "local", "-q", cwd=tmp_path, env=env).returncode == 0
    (tmp_path / "targets.json").write_text(json.dumps(
        {"systems": {"JEDI": {"users": {"value": 1000, "lower": "-5%", "upper": "+20%"}},
                     "A100": {"users": [900, -0.1, 0.3]}}}))
    out = bench("compare", "-i", "last", "--targets", "targets.json", cwd=tmp_path, env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "no reference for system local" in out.stdout
    doc = json.loads(bench("compare", "-i", "last", "--targets", "targets.json", "--format", "json",
                           cwd=tmp_path, env=env).stdout)
    assert [(b["name"], b["verdict"], b["passed"]) for b in doc["benchmarks"]] == [("users", "no reference", False)]
    assert doc["system"] is None and not doc["passed"]
    (tmp_path / "typo.yaml").write_text("systems:\n  local:\n    user: 25\n")
    typo = bench("compare", "-i", "last", "--targets", "typo.yaml", cwd=tmp_path, env=env)
    assert typo.returncode != 0 and "typo.yaml:3" in typo.stderr and "did you mean 'users'?" in typo.stderr


def test_a_failed_copy_leaves_the_aggregate_incomplete(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "half.yaml").write_text(
        "name: half\noutpath: runs\nstep:\n  name: run\n  copies: 2\n"
        "  do: 'echo \"performance: 5 img/s\"; test $CARAMEL_COPY = 0'\n")
    assert bench("run", "half.yaml", "-q", cwd=tmp_path, env=env).returncode == 1
    rows = rows_of(bench("result", "-i", "last", "--format", "csv", cwd=tmp_path, env=env).stdout)
    assert rows["sum"]["status"] == "incomplete: sum of 1 of 2 copies" and rows["sum"]["performance"] == ""
    assert rows["1"]["status"].startswith("failed") and "sd" not in rows  # no spread of an incomplete set


@pytest.mark.slow
def test_a_suites_targets_file_may_name_its_other_benchmarks(tmp_path: Path, env: dict[str, str]) -> None:
    """One run judged against a whole suite's targets: a benchmark known from a file beside it or from
    the history is no 'unknown benchmark' (it has no figure in this run); a name nothing knows still is."""
    (tmp_path / "fast.yaml").write_text(LINES.format(name="fast", extra=""))
    (tmp_path / "slow.yaml").write_text(LINES.format(name="slow", extra="").replace("fast", "slow"))
    assert bench("run", "fast.yaml", "--tag", "local", "-q", cwd=tmp_path, env=env).returncode == 0
    targets = tmp_path / "targets.yaml"
    targets.write_text("systems:\n  local:\n    fast: {value: 25, lower: -10%, upper: 10%}\n    slow: 50\n")
    judged = bench("compare", "fast_runs", "-i", "last", "--targets", str(targets), cwd=tmp_path, env=env)
    assert "unknown benchmark" not in judged.stderr, judged.stderr
    assert "Traceback" not in judged.stderr and judged.returncode == 1, judged.stdout + judged.stderr
    targets.write_text("systems:\n  local:\n    fast: 25\n    slwo: 50\n")
    typo = bench("compare", "fast_runs", "-i", "last", "--targets", str(targets), cwd=tmp_path, env=env)
    assert typo.returncode == 2 and "unknown benchmark 'slwo'" in typo.stderr and "slow" in typo.stderr
