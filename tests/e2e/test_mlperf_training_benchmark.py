"""benchmarks/mlperf_training.yaml for real: caramel's GPT and ResNet trained to their targets, a
time-to-train figure in the table, MLPerf logs that MLCommons' compliance checker passes, and the
logs as training results of a submission tree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run_bench import bench
from tests.shipped import copy_benchmarks

pytest.importorskip("torch")
pytest.importorskip("mlperf_logging")


@pytest.mark.slow
def test_time_to_train_and_compliant_logs(tmp_path: Path, env: dict[str, str]) -> None:
    from tests.payloads.workloads.test_mlperf_training import RULESET, common_rules_messages

    copy_benchmarks(tmp_path / "benchmarks")
    ran = bench("run", "benchmarks/mlperf_training.yaml", "--tag", "local", cwd=tmp_path, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = bench("result", "-i", "last", "--style", "json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    rows = {row["workload"]: row for row in json.loads(shown.stdout)["rows"]}
    assert set(rows) == {"gpt", "resnet"}
    for row in rows.values():
        assert float(row["time_to_train[s]"]) > 0 and float(row["quality"]) > 0
    assert float(rows["resnet"]["quality"]) >= 0.759 and float(rows["gpt"]["quality"]) <= 5.0
    logs = {log.parent.parent.name: log for log in tmp_path.glob("benchmarks/mlperf_training_run/*/*/work/mlperf_log.txt")}
    assert len(logs) == 2
    for log in logs.values():
        assert common_rules_messages(log) == {}
    resnet_log = next(log for log in logs.values() if '"value": "resnet"' in log.read_text())
    checked = subprocess.run([sys.executable, "-m", "mlperf_logging.compliance_checker", "--ruleset", RULESET,
                              "--log_output", str(tmp_path / "checker.log"), str(resnet_log)],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    submitted = bench("mlperf", "submit", "-i", "last", "--submitter", "caramel", "--division", "open",
                      "-o", "tree", "--no-history", cwd=tmp_path, env=env)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    results = sorted(p.relative_to(tmp_path / "tree") for p in (tmp_path / "tree").rglob("result_*.txt"))
    assert [p.parts[-2] for p in results] == ["caramel_gpt", "resnet"]
