"""The shipped MLPerf inference benchmark end to end (docs/mlperf.md): find_performance's targets
in each run's user.conf through the link to its work folder, the four scenarios x two modes as
rows with LoadGen's verdict, a latency bound the CPU cannot meet a failed row with LoadGen's
reason, and `--tag find_performance` the short test alone. The file is the shipped one with a
smaller dataset and shorter training, so that the test takes seconds a workpackage."""

from __future__ import annotations

import csv
import importlib.util
import io
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.resources import shipped

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("mlperf_loadgen") is None,
        reason="mlcommons-loadgen is not installed (pip install 'caramel[mlperf]')",
    ),
]


def small_copy(tmp_path: Path) -> Path:
    text = (shipped("benchmarks") / "mlperf_inference.yaml").read_text()
    text = text.replace("{name: samples, type: int, _: 512}", "{name: samples, type: int, _: 64}")
    text = text.replace(
        "{name: train_steps, type: int, _: 600}", "{name: train_steps, type: int, _: 30}"
    )
    path = tmp_path / "mlperf_inference.yaml"
    path.write_text(text)
    return path


def rows(tmp_path: Path, env: dict[str, str]) -> list[dict[str, str]]:
    shown = bench(
        "result",
        "mlperf_inference_run",
        "--style",
        "csv",
        "--only",
        "mlperf",
        cwd=tmp_path,
        env=env,
    )
    assert shown.returncode == 0, shown.stderr
    return list(csv.DictReader(io.StringIO(shown.stdout.strip())))


def test_eight_rows_and_the_tight_server_row_fails_with_loadgens_reason(tmp_path: Path) -> None:
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    small_copy(tmp_path)
    ran = bench(
        "run",
        "mlperf_inference.yaml",
        "--tag",
        "local",
        "tight_latency",
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    table = rows(tmp_path, env)
    pairs = [(r["scenario"], r["mode"]) for r in table]
    assert pairs == [
        (s, m)
        for s in ("SingleStream", "MultiStream", "Server", "Offline")
        for m in ("performance", "accuracy")
    ], ran.stdout + ran.stderr
    server = table[4]
    assert "LoadGen: INVALID: Performance constraints satisfied: NO" in server["status"]
    assert "Reduce target QPS to improve latency." in server["status"]
    accuracy = [r for r in table if r["mode"] == "accuracy"]
    assert all(r["result"] == "VALID" and float(r["f1_of_reference[%]"]) >= 99 for r in accuracy)
    run = tmp_path / "mlperf_inference_run" / "000000"
    found = (run / "000000_find_performance" / "work" / "performance.json").read_text()
    assert "found_qps" in found
    conf = (run / "000007_run" / "work" / "Offline_performance" / "user.conf").read_text()
    assert "bert.Offline.target_qps = " in conf and "bert.Offline.min_duration = 1000" in conf


def test_tag_find_performance_runs_the_short_test_alone(tmp_path: Path) -> None:
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    small_copy(tmp_path)
    ran = bench(
        "run",
        "mlperf_inference.yaml",
        "--tag",
        "local",
        "find_performance",
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run = tmp_path / "mlperf_inference_run" / "000000"
    assert sorted(p.name for p in run.iterdir() if p.name.startswith("0000")) == [
        "000000_find_performance"
    ]
