"""The trainers' runs to a target quality: MLPerf's :::MLLOG lines, judged by MLCommons' own
compliance checker (mlperf_logging.compliance_checker), and time to train as its result summarizer
computes it."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("mlperf_logging")

from mlperf_logging.compliance_checker import mlp_compliance, mlp_parser  # noqa: E402

from caramel.payloads.workloads import gpt, resnet  # noqa: E402
from caramel.payloads.workloads.data import write_corpus  # noqa: E402

RULESET = "4.0.0"  # the newest training rules that still hold both resnet and gpt3


def resnet_run(tmp_path, capsys, *extra: str) -> tuple:
    log = tmp_path / "mlperf_log.txt"
    resnet.main(["--target-accuracy", "0.759", "--batch_size", "32", "--width", "4", "--threads", "1",
                 "--train-samples", "512", "--eval-samples", "128", "--max-epochs", "5",
                 "--mllog-file", str(log), *extra])
    return log, capsys.readouterr().out


def gpt_run(tmp_path, capsys, *extra: str) -> tuple:
    write_corpus(tmp_path / "corpus", documents=64, mean_length=200)
    log = tmp_path / "gpt_log.txt"
    gpt.main(["--hidden-size", "32", "--num-layers", "1", "--num-attention-heads", "2", "--seq-length", "16",
              "--micro-batch-size", "8", "--global-batch-size", "8", "--lr", "3e-3", "--train-iters", "200",
              "--eval-interval", "10", "--data-path", str(tmp_path / "corpus"), "--threads", "1",
              "--target-loss", "5.2", "--mllog-file", str(log), *extra])
    return log, capsys.readouterr().out


def checker_cli(log) -> subprocess.CompletedProcess:
    """`python -m mlperf_logging.compliance_checker` as a submitter runs it."""
    return subprocess.run([sys.executable, "-m", "mlperf_logging.compliance_checker", "--ruleset", RULESET,
                           "--log_output", str(log.parent / "checker.log"), str(log)],
                          capture_output=True, text=True, timeout=120)


def common_rules_messages(log) -> dict:
    """The checker's common rules alone (training_4.0.0/common.yaml through its ComplianceChecker):
    a log that is no MLPerf benchmark of its own (caramel_gpt) has no division/benchmark rules."""
    checker = mlp_compliance.make_checker("training", RULESET, False, True)
    lines, errors = mlp_parser.parse_file(str(log), ruleset=RULESET)
    assert errors == []
    rules = os.path.join(os.path.dirname(mlp_compliance.__file__), f"training_{RULESET}", "common.yaml")
    checker.configured_checks(lines, rules)
    mlp_compliance.enqueued_configs.clear()  # the division's rules it queued are not run here
    return {**checker.overwritable, **{str(i): m for i, m in enumerate(checker.not_overwritable)}}


def run_seconds(log) -> float:
    """Time to train as mlperf_logging's result summarizer has it (result_summarizer.py,
    _query_run_start_stop / _query_mlperf_strong_scaling_score: run_stop - run_start, in ms)."""
    lines, _ = mlp_parser.parse_file(str(log), ruleset=RULESET)
    stamps = {line.key: line.timestamp for line in lines if line.key in ("run_start", "run_stop")}
    return (float(stamps["run_stop"]) - float(stamps["run_start"])) / 1000.0


@pytest.mark.slow
def test_resnet_log_passes_the_compliance_checker_as_mlperf_resnet(tmp_path, capsys) -> None:
    log, out = resnet_run(tmp_path, capsys)
    checked = checker_cli(log)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    output = checked.stdout + checked.stderr
    # common, then the division's, then the benchmark's own rules (open_resnet.yaml) ran
    assert "open_resnet.yaml" in output and "SUCCESS" in output
    seconds = float(re.search(r"^> time to train: ([\d.]+) s \(reached eval accuracy 0.759: ", out, re.M)[1])
    assert seconds == pytest.approx(run_seconds(log), abs=1e-3)


@pytest.mark.slow
def test_gpt_log_passes_the_checkers_common_rules_and_times_its_run(tmp_path, capsys) -> None:
    log, out = gpt_run(tmp_path, capsys)
    assert common_rules_messages(log) == {}
    seconds = float(re.search(r"^> time to train: ([\d.]+) s \(reached eval loss 5.2: ", out, re.M)[1])
    assert seconds == pytest.approx(run_seconds(log), abs=1e-3)
    assert re.search(r"^> tokens/s: [\d.]+$", out, re.M)
    lines, _ = mlp_parser.parse_file(str(log), ruleset=RULESET)
    keys = {line.key: line.value["value"] for line in lines}
    assert keys["submission_benchmark"] == "caramel_gpt" and keys["global_batch_size"] == 8
    assert keys["max_sequence_length"] == 16 and keys["gradient_accumulation_steps"] == 1


@pytest.mark.slow
def test_the_benchmarks_own_rules_apply_a_closed_resnet_fails_them(tmp_path, capsys) -> None:
    # closed_resnet.yaml enqueues closed_resnet_sgd.yaml, whose hyperparameters (the LR schedule,
    # momentum, ...) the small trainer does not log: the checker must say so, not pass it
    log, _ = resnet_run(tmp_path, capsys, "--mlperf-division", "closed")
    checked = checker_cli(log)
    assert checked.returncode == 1
    assert "closed_resnet" in checked.stdout + checked.stderr


@pytest.mark.slow
def test_a_run_that_misses_its_target_stops_aborted_without_a_time_to_train(tmp_path, capsys) -> None:
    log, out = resnet_run(tmp_path, capsys, "--target-accuracy", "0.9999", "--max-epochs", "1")
    assert "> time to train" not in out and re.search(r"^> target not reached: [\d.]+ after", out, re.M)
    lines, _ = mlp_parser.parse_file(str(log), ruleset=RULESET)
    assert [line.value["metadata"]["status"] for line in lines if line.key == "run_stop"] == ["aborted"]
    assert checker_cli(log).returncode == 0  # an aborted run is still a well-formed log


def test_a_division_other_than_closed_or_open_is_refused() -> None:
    with pytest.raises(SystemExit, match="expected closed or open"):
        resnet.main(["--target-accuracy", "0.5", "--mlperf-division", "preview"])
