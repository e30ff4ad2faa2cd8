"""MLPerf inference through LoadGen: the log parser, the F1, the user.conf, a real LoadGen run.

The expected values come from the peer: LoadGen's summary layout and reasons from MLCommons'
inference repository, loadgen/results.cc (PerformanceSummary::LogSummary, MinDurationMet,
PerfConstraintsMet); the F1 from language/bert/evaluate_v1.1.py (f1_score, normalize_answer, run
on these inputs); the span choice from language/bert/accuracy-squad.py (write_predictions); the
accuracy log's encoding from accuracy-squad.py (load_loadgen_log); the data files from a real
LoadGen run (tests/data/mlperf_loadgen/README.md).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.payloads.workloads import loadgen_log, mlperf_inference, mlperf_squad
from caramel.payloads.workloads.mlperf_backends import Backend, BackendError, Precision, check

DATA = Path(__file__).parents[2] / "data" / "mlperf_loadgen"
needs_loadgen = pytest.mark.skipif(
    importlib.util.find_spec("mlperf_loadgen") is None,
    reason="mlcommons-loadgen is not installed (pip install 'caramel[mlperf]')",
)


# -- the summary, from a real LoadGen run's files -------------------------------------------------


def test_offline_summary_is_valid_with_samples_per_second() -> None:
    summary = loadgen_log.read_summary(DATA / "Offline_summary.txt")
    assert (summary.scenario, summary.mode, summary.valid) == ("Offline", "PerformanceOnly", True)
    assert summary.figures["samples_per_s"] == 7541.28  # "Samples per second: 7541.28"
    assert summary.settings["target_qps"] == "7273.94"  # the user.conf's 7273.935, as LoadGen ran
    assert summary.reasons == []


def test_server_summary_invalid_gives_loadgen_reasons() -> None:
    summary = loadgen_log.read_summary(DATA / "Server_summary.txt")
    assert summary.valid is False
    assert summary.figures["samples_per_s"] == 791.28  # "Completed samples per second"
    assert "scheduled_queries_per_s" in summary.figures
    # results.cc: PerfConstraintsMet's recommendation for the Server scenario
    assert "Performance constraints satisfied: NO" in summary.reasons
    assert "Reduce target QPS to improve latency." in summary.reasons
    assert summary.settings["target_latency (ns)"] == "50000"


def test_single_and_multi_stream_latencies_in_ms() -> None:
    single = loadgen_log.read_summary(DATA / "SingleStream_summary.txt")
    assert single.figures["latency_p90_ms"] == pytest.approx(0.568603)  # 568603 ns
    assert single.figures["latency_p99_ms"] == pytest.approx(16.968656)
    assert single.figures["latency_mean_ms"] == pytest.approx(1.038133)
    assert single.figures["samples_per_s"] == 951.63  # "QPS w/ loadgen overhead"
    multi = loadgen_log.read_summary(DATA / "MultiStream_summary.txt")
    assert multi.figures["latency_p99_ms"] == pytest.approx(15.545961)  # per-query latencies
    assert "samples_per_s" not in multi.figures  # LogSummary prints no throughput for it


def test_bad_verdict_names_file_and_line(tmp_path: Path) -> None:
    text = (DATA / "Offline_summary.txt").read_text().replace("INVALID", "X").replace("VALID", "X")
    path = tmp_path / "mlperf_log_summary.txt"
    path.write_text(text)
    with pytest.raises(loadgen_log.LogError, match=r"mlperf_log_summary.txt:8: 'Result is : X'"):
        loadgen_log.read_summary(path)


def test_not_a_summary_is_named(tmp_path: Path) -> None:
    path = tmp_path / "summary.txt"
    path.write_text("hello\n")
    with pytest.raises(loadgen_log.LogError, match="summary.txt:1: no 'Scenario"):
        loadgen_log.read_summary(path)


SCENARIO_LINES = {  # results.cc LogSummary: the scenario's first figure line
    "SingleStream": "90.0th percentile latency (ns) : {p}",
    "MultiStream": "99.0th percentile latency (ns) : {p}",
    "Server": "Completed samples per second    : {qps}",
    "Offline": "Samples per second: {qps}",
}


def render(scenario: str, valid: bool, qps: float, latencies: list[int]) -> str:
    """A summary in LogSummary's layout (results.cc) with the given values."""
    low, mean, high = sorted(latencies)
    lines = [
        "=" * 48,
        "MLPerf Results Summary",
        "=" * 48,
        "SUT name : PySUT",
        f"Scenario : {scenario}",
        "Mode     : PerformanceOnly",
        SCENARIO_LINES[scenario].format(p=high, qps=qps),
        f"Result is : {'VALID' if valid else 'INVALID'}",
        f"  Min duration satisfied : {'Yes' if valid else 'NO'}",
        "  Min queries satisfied : Yes",
        "  Early stopping satisfied: Yes",
    ]
    if not valid:
        lines += ["Recommendations:", " * Increase expected QPS so the loadgen pre-generates"]
    lines += ["", "=" * 48, "Additional Stats", "=" * 48]
    lines += [
        f"Min latency (ns)                : {low}",
        f"Mean latency (ns)               : {mean}",
    ]
    lines += [f"Max latency (ns)                : {high}"]
    lines += [f"99.00 percentile latency (ns)   : {high}", "", "=" * 48, "Test Parameters Used"]
    lines += ["=" * 48, "samples_per_query : 1", "target_qps : 10"]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(
    scenario=st.sampled_from(sorted(SCENARIO_LINES)),
    valid=st.booleans(),
    qps=st.floats(min_value=0.001, max_value=1e7, allow_nan=False).map(lambda x: round(x, 3)),
    latencies=st.lists(st.integers(0, 10**12), min_size=3, max_size=3),
)
def test_summary_property_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    scenario: str,
    valid: bool,
    qps: float,
    latencies: list[int],
) -> None:
    path = tmp_path_factory.mktemp("s") / "mlperf_log_summary.txt"
    path.write_text(render(scenario, valid, qps, latencies))
    summary = loadgen_log.read_summary(path)
    assert (summary.scenario, summary.valid) == (scenario, valid)
    low, mean, high = sorted(latencies)
    assert summary.figures["latency_min_ms"] == pytest.approx(low / 1e6)
    assert summary.figures["latency_max_ms"] == pytest.approx(high / 1e6)
    assert summary.figures["latency_p99_ms"] == pytest.approx(high / 1e6)
    if scenario in ("Server", "Offline"):
        assert summary.figures["samples_per_s"] == pytest.approx(qps)
    assert ("Min duration satisfied: NO" in summary.reasons) is not valid
    assert summary.settings == {"samples_per_query": "1", "target_qps": "10"}


@settings(max_examples=80, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_summary_parser_never_crashes(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("t") / "mlperf_log_summary.txt"
    path.write_text("Scenario : Offline\nMode : PerformanceOnly\n" + text, encoding="utf-8")
    try:
        loadgen_log.read_summary(path)
    except loadgen_log.LogError as error:
        assert "mlperf_log_summary.txt:" in str(error)


# -- F1 and the span, as MLPerf's BERT accuracy script ----------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "truth", "expected"),  # evaluate_v1.1.py f1_score, run on these pairs
    [
        ("the cat sat", "a cat sat down", 0.8),
        ("w7 w8 w9", "w8 w9", 0.8),
        ("w1", "w2", 0.0),
        ("Cat, sat!", "cat sat", 1.0),
        ("w3 w3 w4", "w3 w4 w4", 2 / 3),
    ],
)
def test_f1_score_matches_evaluate_v11(prediction: str, truth: str, expected: float) -> None:
    assert mlperf_squad.f1_score(prediction, truth) == pytest.approx(expected)


def test_best_span_skips_an_end_before_the_start() -> None:
    # write_predictions: the best valid pair by start + end logit, end >= start, not the question
    start = np.array([9.0, 0.0, 5.0, 1.0, 0.0])
    end = np.array([0.0, 6.0, 0.0, 4.0, 0.0])
    assert mlperf_squad.best_span(start, end) == (2, 3)  # (1, 1) scores 6, (2, 3) scores 9


def test_accuracy_log_decoded_and_scored(tmp_path: Path) -> None:
    task = mlperf_squad.make_task(4, seq_len=16, seed=3)
    records = []
    for index in range(4):
        logits = np.full((16, 2), -10.0, np.float32)
        logits[task.starts[index], 0] = logits[task.ends[index], 1] = 10.0
        records.append({"seq_id": index, "qsl_idx": index, "data": logits.tobytes().hex().upper()})
    (tmp_path / "acc.json").write_text(json.dumps(records))
    outputs = loadgen_log.read_accuracy(tmp_path / "acc.json")
    assert mlperf_squad.score(task, outputs) == 100.0
    del outputs[3]  # evaluate: an unanswered question scores 0
    assert mlperf_squad.score(task, outputs) == 75.0


def test_bad_accuracy_record_is_named(tmp_path: Path) -> None:
    (tmp_path / "acc.json").write_text('[{"qsl_idx": 0, "data": "zz"}]')
    with pytest.raises(loadgen_log.LogError, match="acc.json: record 0"):
        loadgen_log.read_accuracy(tmp_path / "acc.json")


# -- the settings: find_performance's targets in user.conf, read by LoadGen -------------------------


def test_targets_from_find_performance_in_user_conf(tmp_path: Path) -> None:
    (tmp_path / "find_performance").mkdir()
    found = {"found_qps": 1000.0, "found_latency_ms": 2.0, "fp32_f1": 90.0}
    (tmp_path / "find_performance" / "performance.json").write_text(json.dumps(found))
    goal = mlperf_inference.targets(tmp_path, 0.0, 0.0, 0.25, 0.0)
    text = mlperf_inference.user_conf(
        mlperf_inference.Scenario.OFFLINE, mlperf_inference.Rules.LOCAL, goal, 64
    )
    assert "bert.Offline.target_qps = 3000.000" in text  # found x HEADROOM 3
    assert "bert.Server.target_qps = 125.000" in text  # 0.25 x min(1000, 1000 / 2 ms)
    assert "bert.Offline.min_duration = 1000" in text
    valid = mlperf_inference.user_conf(
        mlperf_inference.Scenario.OFFLINE, mlperf_inference.Rules.VALID, goal, 64
    )
    assert "min_duration" not in valid  # mlperf.conf's 600 s stand


def test_no_targets_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(mlperf_inference.InvalidResult, match="find_performance"):
        mlperf_inference.targets(tmp_path, 0.0, 0.0, 0.25, 0.0)


def test_backend_precision_checked() -> None:
    with pytest.raises(BackendError, match="pytorch on cpu has no fp16: it runs fp32, bf16, int8"):
        check(Backend.PYTORCH, "cpu", Precision.FP16)
    with pytest.raises(BackendError, match="device 'tpu'"):
        check(Backend.ONNXRUNTIME, "tpu", Precision.FP32)


def _perfect(task: mlperf_squad.Task, delay: float = 0.0) -> mlperf_inference.Workload:
    """A workload whose predictor answers every sample right (the F1 is 100)."""
    import time

    answers = {
        tuple(t): (s, e) for t, s, e in zip(task.tokens, task.starts, task.ends, strict=True)
    }

    def predict(tokens: np.ndarray) -> np.ndarray:
        time.sleep(delay)
        out = np.full((*tokens.shape, 2), -10.0, np.float32)
        for row, sample in enumerate(tokens):
            start, end = answers[tuple(sample)]
            out[row, start, 0] = out[row, end, 1] = 10.0
        return out

    return mlperf_inference.Workload(predict, task, 100.0)


def child(delay: float, kwargs: dict) -> None:
    """In a fresh process (LoadGen's FromConfig logs an error when a process reads a second
    user.conf, so each run is a process of its own, as each workpackage is): one run with the
    perfect workload; prints its figures or its InvalidResult as JSON."""
    task = mlperf_squad.make_task(64, mlperf_inference.SEQ_LEN, seed=2)
    mlperf_inference.workload = lambda *a: _perfect(task, delay)  # type: ignore[assignment]
    try:
        result = {"figures": mlperf_inference.run(samples=64, **kwargs)}
    except mlperf_inference.InvalidResult as error:
        result = {"invalid": str(error)}
    print(json.dumps(result))


def _run(tmp_path: Path, delay: float, **kwargs: object) -> dict:
    import os
    import subprocess
    import sys

    root = Path(__file__).parents[3]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    kwargs = {"target_qps": 1000.0, "target_latency_ms": 0.5, **kwargs}
    code = (
        "from tests.payloads.workloads.test_mlperf_inference import child; "
        f"child({delay!r}, {kwargs!r})"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
@needs_loadgen
def test_loadgen_offline_run_reads_user_conf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 16 ms a batch of 32: 2000 samples/s, so the 3300 samples LoadGen sends last over 1 s
    figures = _run(tmp_path, 0.016, scenario="Offline", mode="performance")["figures"]
    assert figures["target_qps"] == 3000.0  # user.conf's 1000 x 3, in LoadGen's own summary
    assert figures["samples_per_s"] > 0
    assert (
        "bert.Offline.target_qps = 3000.000"
        in (tmp_path / "Offline_performance/user.conf").read_text()
    )


@pytest.mark.slow
@needs_loadgen
def test_loadgen_accuracy_run_scores_f1(tmp_path: Path) -> None:
    figures = _run(tmp_path, 0.0, scenario="SingleStream", mode="accuracy")["figures"]
    assert figures["f1"] == 100.0
    assert figures["f1_of_reference"] == 100.0


@pytest.mark.slow
@needs_loadgen
def test_latency_bound_missed_is_invalid_with_reason(tmp_path: Path) -> None:
    # 2 ms a sample against a 50 us bound: results.cc's PerfConstraintsMet fails the Server
    reason = _run(tmp_path, 0.002, scenario="Server", mode="performance", server_latency_ms=0.05)
    assert "Performance constraints satisfied: NO" in reason["invalid"]
    assert "Reduce target QPS to improve latency." in reason["invalid"]


def test_accuracy_below_target_fails(tmp_path: Path) -> None:
    task = mlperf_squad.make_task(8, mlperf_inference.SEQ_LEN, seed=2)
    work = mlperf_inference.Workload(lambda t: np.zeros((*t.shape, 2), np.float32), task, 90.0)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mlperf_log_accuracy.json").write_text(
        json.dumps([{"qsl_idx": 0, "data": np.zeros((24, 2), np.float32).tobytes().hex()}])
    )
    with pytest.raises(mlperf_inference.InvalidResult, match="below 99 % of the FP32 reference"):
        mlperf_inference.accuracy(work, out)


# -- the backends on the real encoder --------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "precision"),
    [
        ("pytorch", "fp32"),
        ("pytorch", "bf16"),
        ("pytorch", "int8"),
        ("onnxruntime", "fp32"),
        ("onnxruntime", "int8"),
    ],
)
def test_backends_agree_with_fp32(tmp_path: Path, backend: str, precision: str) -> None:
    if backend == "onnxruntime":
        pytest.importorskip("onnxruntime", reason="ONNX Runtime is not installed")
        pytest.importorskip("onnx", reason="the ONNX exporter needs the onnx package")
    import torch

    from caramel.payloads.workloads.mlperf_backends import predictor

    torch.manual_seed(0)
    model = mlperf_squad.build_model(64, 24, 32, 1, 2).eval()
    tokens = mlperf_squad.make_task(4, 24, seed=1).tokens
    with torch.no_grad():
        expected = model(torch.from_numpy(tokens)).numpy()
    got = predictor(model, Backend(backend), "cpu", Precision(precision), tmp_path)(tokens)
    assert got.shape == (4, 24, 2) and got.dtype == np.float32
    assert np.abs(got - expected).max() < (1e-4 if precision == "fp32" else 0.2)


@pytest.mark.slow
@needs_loadgen
def test_find_performance_then_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trained encoder end to end: find_performance's model and targets feed a run."""
    (tmp_path / "find").mkdir()
    monkeypatch.chdir(tmp_path / "find")
    found = mlperf_inference.find_performance(samples=64, train_steps=20)
    assert found["found_qps"] > 0 and found["found_latency_ms"] > 0
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "find_performance").symlink_to(tmp_path / "find")
    monkeypatch.chdir(tmp_path / "run")
    figures = mlperf_inference.run("Offline", "accuracy", samples=64)
    assert figures["reference_f1"] == pytest.approx(found["fp32_f1"])
    assert figures["f1"] == pytest.approx(found["fp32_f1"], rel=1e-6)  # fp32: the reference itself


# -- the reference BERT's files (a site with MLCommons' downloads), up to the feature tooling -------


def _squad(path: Path) -> Path:
    # SQuAD v1.1's layout (dev-v1.1.json: data / paragraphs / qas), two questions
    qas = [{"id": "q1", "question": "?", "answers": [{"text": "a", "answer_start": 0}]}] * 2
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": qas}]}]}))
    return path


def test_reference_files_are_checked(tmp_path: Path) -> None:
    from caramel.payloads.workloads import mlperf_reference as ref

    with pytest.raises(ref.ReferenceError, match="model_path .*model.onnx: expected"):
        ref.check_files(str(tmp_path / "model.onnx"), str(tmp_path / "dev.json"))
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(ref.ReferenceError, match="vocab.txt: the model's vocabulary"):
        ref.check_files(str(tmp_path / "model.onnx"), str(tmp_path / "dev.json"))
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    (tmp_path / "dev.json").write_text('{"data": [\n}')
    with pytest.raises(ref.ReferenceError, match=r"dev.json:2: not JSON"):
        ref.check_files(str(tmp_path / "model.onnx"), str(tmp_path / "dev.json"))
    files = ref.check_files(str(tmp_path / "model.onnx"), str(_squad(tmp_path / "dev.json")))
    assert files.questions == 2


def test_reference_run_stops_at_the_feature_tooling(tmp_path: Path) -> None:
    from caramel.payloads.workloads import mlperf_reference as ref

    (tmp_path / "model.onnx").write_bytes(b"")
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    dataset = _squad(tmp_path / "dev.json")
    with pytest.raises(ref.ReferenceError, match="create_squad_data|features"):
        mlperf_inference.run(model_path=str(tmp_path / "model.onnx"), dataset_path=str(dataset))


def test_detail_errors_listed_and_bad_line_named(tmp_path: Path) -> None:
    # the detail log's `:::MLLOG {json}` records (loadgen/logging.cc); metadata.is_error marks errors
    record = {"key": "error_runtime", "value": "Ending early", "metadata": {"is_error": True}}
    fine = {"key": "loadgen_version", "value": "6.0.17", "metadata": {"is_error": False}}
    path = tmp_path / "mlperf_log_detail.txt"
    path.write_text(f":::MLLOG {json.dumps(fine)}\n:::MLLOG {json.dumps(record)}\n")
    assert loadgen_log.detail_errors(path) == ["error_runtime: Ending early"]
    path.write_text(":::MLLOG {oops\n")
    with pytest.raises(loadgen_log.LogError, match="mlperf_log_detail.txt:1: not a JSON record"):
        loadgen_log.detail_errors(path)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 10_000),
        st.lists(st.floats(width=32, allow_nan=False), min_size=2, max_size=40).filter(
            lambda v: len(v) % 2 == 0
        ),
        max_size=5,
    )
)
def test_accuracy_log_property_round_trip(
    tmp_path_factory: pytest.TempPathFactory, outputs: dict[int, list[float]]
) -> None:
    # LoadGen writes each response's bytes as upper-case hex (accuracy-squad.py reads them back)
    records = [
        {"seq_id": n, "qsl_idx": index, "data": np.array(v, np.float32).tobytes().hex().upper()}
        for n, (index, v) in enumerate(outputs.items())
    ]
    path = tmp_path_factory.mktemp("a") / "mlperf_log_accuracy.json"
    path.write_text(json.dumps(records))
    read = loadgen_log.read_accuracy(path)
    assert set(read) == set(outputs)
    for index, values in outputs.items():
        assert read[index].shape == (len(values) // 2, 2)
        assert read[index].ravel().tolist() == np.array(values, np.float32).tolist()


def test_the_runs_figure_literal_agrees_with_the_summary_parsers_units():
    """mlperf_inference.run.caramel_figures is a literal (so that --no-eval reads it without running
    the module); it must say what loadgen_log.FIGURE_UNITS says for every figure both name."""
    from caramel.payloads.workloads import loadgen_log, mlperf_inference

    declared = mlperf_inference.run.caramel_figures
    assert {k: declared[k] for k in loadgen_log.FIGURE_UNITS} == loadgen_log.FIGURE_UNITS
