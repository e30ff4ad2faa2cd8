"""MLPerf inference through LoadGen: the `call:` targets of benchmarks/mlperf_inference.yaml.

    find_performance: a short Offline and SingleStream test -> performance.json (QPS, latency)
    run:              one scenario in one mode, LoadGen's settings from mlperf.conf and a
                      user.conf rendered in the work folder (targets from find_performance)

The system under test answers LoadGen's queries with the model's `(seq_len, 2)` float32 logits per
sample, as MLCommons' reference BERT SUT (language/bert/pytorch_SUT.py) does; the query sample
library holds the evaluation set in memory. The figures are LoadGen's own (loadgen_log); a run
LoadGen calls INVALID, or an accuracy below 99 % of the FP32 reference, raises, which makes the
workpackage a failed row whose error holds LoadGen's reasons.

The model is caramel's small encoder on the synthetic span task (mlperf_squad), trained by
find_performance and saved as `model.npz` (numpy arrays, no pickle) for the runs to load. A site
with MLCommons' reference BERT gives `model_path` and `dataset_path` instead (reference_bert).
"""

from __future__ import annotations

import array
import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from caramel.payloads.workloads import loadgen_log, mlperf_reference, mlperf_squad
from caramel.payloads.workloads.mlperf_backends import Backend, Precision, Predictor, predictor

PERFORMANCE_FILE = "performance.json"
MODEL_FILE = "model.npz"
ACCURACY_TARGET = 0.99  # MLPerf BERT's closed-division target: 99 % of the FP32 reference's F1
MODEL_NAME = "bert"  # the model's name in mlperf.conf and user.conf
SEQ_LEN = 24
# The Offline QPS and the latencies LoadGen is told are the found ones with this headroom (QPS
# times it, latencies over it), so that it pre-generates enough queries for min_duration when the
# run goes faster than the short test did (a busy machine's figures vary run to run).
HEADROOM = 3.0


class Scenario(Enum):
    SINGLE_STREAM = "SingleStream"
    MULTI_STREAM = "MultiStream"
    SERVER = "Server"
    OFFLINE = "Offline"


class Mode(Enum):
    PERFORMANCE = "performance"
    ACCURACY = "accuracy"


class Rules(Enum):
    """`local`: short runs (LOCAL_RUNS); `valid`: mlperf.conf's durations and query counts."""

    LOCAL = "local"
    VALID = "valid"


# Short runs: (min_duration ms, min_query_count) per scenario, enough queries for LoadGen's early
# stopping (SingleStream at least 64, Server about 460, MultiStream 662: loadgen/results.cc).
LOCAL_RUNS = {
    Scenario.SINGLE_STREAM: (1000, 128),
    Scenario.MULTI_STREAM: (1000, 662),
    Scenario.SERVER: (1000, 600),
    Scenario.OFFLINE: (1000, 1),
}


class InvalidResult(Exception):
    """LoadGen called the run INVALID, or its accuracy missed the target: the reasons."""


@dataclass(frozen=True)
class Workload:
    """The model as a predictor and the evaluation set it answers."""

    predict: Predictor
    dataset: mlperf_squad.Task
    reference_f1: float


def _threads(threads: int) -> None:
    import torch

    if threads > 0:
        torch.set_num_threads(threads)


def _train(samples: int, train_steps: int, seed: int, work: Path) -> tuple[object, float]:
    """Train the encoder and save it (MODEL_FILE) with its FP32 reference F1."""
    task = mlperf_squad.make_task(8 * samples, SEQ_LEN, seed=seed + 1)
    evaluation = mlperf_squad.make_task(samples, SEQ_LEN, seed=seed + 2)
    trained = mlperf_squad.train(task, evaluation, train_steps, layers=2, seed=seed)
    module = trained.model
    state = {k: v.numpy() for k, v in module.state_dict().items()}  # type: ignore[attr-defined]
    np.savez(work / MODEL_FILE, reference_f1=np.float64(trained.reference_f1), **state)
    return trained.model, trained.reference_f1


def _load(path: Path) -> tuple[object, float]:
    """The encoder find_performance saved, and its reference F1."""
    import torch

    with np.load(path, allow_pickle=False) as saved:
        state = {k: torch.from_numpy(saved[k]) for k in saved.files if k != "reference_f1"}
        reference = float(saved["reference_f1"])
    vocab, hidden = state["token.weight"].shape
    layers = len({k.split(".")[2] for k in state if k.startswith("encoder.layers.")})
    model = mlperf_squad.build_model(vocab, SEQ_LEN, hidden, layers, 2)
    model.load_state_dict(state)
    return model.eval(), reference


def workload(
    backend: str, precision: str, device: str, samples: int, train_steps: int, seed: int, work: Path
) -> Workload:
    """The model (find_performance's, else trained here) on its backend, and the dataset."""
    saved = work / "find_performance" / MODEL_FILE
    if saved.exists():
        model, reference = _load(saved)
    else:
        model, reference = _train(samples, train_steps, seed, work)
    dataset = mlperf_squad.make_task(samples, SEQ_LEN, seed=seed + 2)
    run = predictor(model, Backend(backend), device, Precision(precision), work)
    return Workload(run, dataset, reference)


class SystemUnderTest:
    """LoadGen's SUT and QSL over a workload: each query's samples answered in batches."""

    def __init__(self, work: Workload, batch_size: int) -> None:
        import mlperf_loadgen as lg

        self.lg, self.work, self.batch_size = lg, work, batch_size
        count = len(work.dataset.tokens)
        # warm up each batch shape LoadGen will send (the first calls of a shape build its
        # kernels: a cold short test underestimated the Offline QPS three times over)
        for size in (1, 8, batch_size):
            for _ in range(3):
                work.predict(work.dataset.tokens[:size])
        self.sut = lg.ConstructSUT(self.issue, lambda: None)
        self.qsl = lg.ConstructQSL(count, count, lambda _: None, lambda _: None)

    def issue(self, queries: list[Any]) -> None:
        for begin in range(0, len(queries), self.batch_size):
            batch = queries[begin : begin + self.batch_size]
            outputs = self.work.predict(self.work.dataset.tokens[[q.index for q in batch]])
            buffers = [array.array("B", output.astype(np.float32).tobytes()) for output in outputs]
            responses = []
            for query, buffer in zip(batch, buffers, strict=True):
                address, length = buffer.buffer_info()
                responses.append(self.lg.QuerySampleResponse(query.id, address, length))
            self.lg.QuerySamplesComplete(responses)  # copies the bytes: buffers may go after

    def test(self, settings: object, outdir: Path) -> None:
        """One LoadGen test; its logs in `outdir` (an accuracy test's summary names no scenario:
        its result is the accuracy log)."""
        outdir.mkdir(parents=True, exist_ok=True)
        output = self.lg.LogOutputSettings()
        output.outdir, output.copy_summary_to_stdout = str(outdir), False
        log_settings = self.lg.LogSettings()
        log_settings.log_output = output
        self.lg.StartTestWithLogSettings(self.sut, self.qsl, settings, log_settings)

    def close(self) -> None:
        self.lg.DestroyQSL(self.qsl)
        self.lg.DestroySUT(self.sut)


def _short_settings(scenario: Scenario, count: int, expected_qps: float) -> object:
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario.value)
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms, settings.min_query_count = 500, min(count, 64)
    settings.offline_expected_qps = expected_qps
    return settings


def find_performance(
    backend: str = "pytorch",
    precision: str = "fp32",
    device: str = "cpu",
    samples: int = 512,
    train_steps: int = 600,
    batch_size: int = 32,
    seed: int = 0,
    threads: int = 1,
    model_path: str = "",
    dataset_path: str = "",
) -> dict[str, float]:
    """A short Offline test (QPS) and SingleStream test (90th percentile latency), written to
    performance.json for the runs' user.conf, as the crowd-benchmarking's test run does."""
    if model_path:
        mlperf_reference.load(model_path, dataset_path)
    _threads(threads)
    work = Path.cwd()
    model, reference = _train(samples, train_steps, seed, work)
    run = predictor(model, Backend(backend), device, Precision(precision), work)
    dataset = mlperf_squad.make_task(samples, SEQ_LEN, seed=seed + 2)
    sut = SystemUnderTest(Workload(run, dataset, reference), batch_size)
    try:
        # Offline: one query of about 11 x the dataset (expected QPS x 0.5 s x LoadGen's 1.1)
        sut.test(_short_settings(Scenario.OFFLINE, samples, 20.0 * samples), work / "Offline")
        sut.test(_short_settings(Scenario.SINGLE_STREAM, samples, 1.0), work / "SingleStream")
    finally:
        sut.close()
    offline = loadgen_log.read_summary(work / "Offline" / "mlperf_log_summary.txt")
    single = loadgen_log.read_summary(work / "SingleStream" / "mlperf_log_summary.txt")
    found = {
        "found_qps": offline.figures["samples_per_s"],
        "found_latency_ms": single.figures["latency_p90_ms"],
        "fp32_f1": reference,
    }
    (work / PERFORMANCE_FILE).write_text(json.dumps(found, indent=1) + "\n")
    return found


find_performance.caramel_figures = {  # type: ignore[attr-defined]
    "found_qps": ("samples/s", "higher"),
    "found_latency_ms": ("ms", "lower"),
    "fp32_f1": ("%", "higher"),
}


@dataclass(frozen=True)
class Targets:
    """What LoadGen is told to expect: from find_performance, or given."""

    offline_qps: float
    server_qps: float
    latency_ms: float  # SingleStream's and MultiStream's expected latency (a query of 8 is one
    # batch: about one sample's time)
    server_latency_ms: float  # Server's latency bound (0: mlperf.conf's, 130 ms for BERT)


def targets(
    work: Path,
    target_qps: float,
    target_latency_ms: float,
    server_fraction: float,
    server_latency_ms: float,
) -> Targets:
    """The targets: given ones win; else find_performance's (its folder, linked in the work
    folder); Server at `server_fraction` of the lower of the Offline QPS and one sample at a time
    (1 / SingleStream's latency), where its latency bound holds."""
    found_file = work / "find_performance" / PERFORMANCE_FILE
    found = json.loads(found_file.read_text()) if found_file.exists() else {}
    qps = target_qps or float(found.get("found_qps", 0.0))
    latency = target_latency_ms or float(found.get("found_latency_ms", 0.0))
    if not qps or not latency:
        raise InvalidResult(
            f"no target_qps/target_latency_ms: give them, or run the find_performance step "
            f"first ({found_file} is missing)"
        )
    one_at_a_time = 1000.0 / latency  # the Server's queries come one sample each, unbatched
    server = server_fraction * min(qps, one_at_a_time)
    return Targets(HEADROOM * qps, server, latency / HEADROOM, server_latency_ms)


def user_conf(scenario: Scenario, rules: Rules, goal: Targets, samples: int) -> str:
    """user.conf in LoadGen's `model.scenario.key = value` form (times in ms): the targets, the
    dataset's size and, under the local rules, the short duration and query count."""
    lines = [
        f"# caramel's user.conf: LoadGen reads it after its own mlperf.conf (rules: {rules.value})",
        f"{MODEL_NAME}.Offline.target_qps = {goal.offline_qps:.3f}",
        f"{MODEL_NAME}.Server.target_qps = {goal.server_qps:.3f}",
        f"{MODEL_NAME}.SingleStream.target_latency = {goal.latency_ms:.3f}",
        f"{MODEL_NAME}.MultiStream.target_latency = {goal.latency_ms:.3f}",
        f"{MODEL_NAME}.*.performance_sample_count_override = {samples}",
    ]
    if goal.server_latency_ms >= 1 and goal.server_latency_ms == int(goal.server_latency_ms):
        lines.append(f"{MODEL_NAME}.Server.target_latency = {int(goal.server_latency_ms)}")
    elif goal.server_latency_ms:  # LoadGen reads whole milliseconds: a finer bound is set directly
        lines.append(f"# Server target_latency {goal.server_latency_ms} ms: set in TestSettings")
    if rules is Rules.LOCAL:
        duration, count = LOCAL_RUNS[scenario]
        lines.append(f"{MODEL_NAME}.{scenario.value}.min_duration = {duration}")
        lines.append(f"{MODEL_NAME}.{scenario.value}.min_query_count = {count}")
    return "\n".join(lines) + "\n"


def loadgen_settings(scenario: Scenario, mode: Mode, conf: Path, goal: Targets) -> object:
    """LoadGen's TestSettings from its mlperf.conf and `conf` (TestSettings.FromConfig)."""
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    if settings.FromConfig(str(conf), MODEL_NAME, scenario.value) != 0:
        raise InvalidResult(f"{conf}: LoadGen could not read it (see mlperf_log_detail.txt)")
    settings.scenario = getattr(lg.TestScenario, scenario.value)
    settings.mode = (
        lg.TestMode.AccuracyOnly if mode is Mode.ACCURACY else lg.TestMode.PerformanceOnly
    )
    if goal.server_latency_ms and goal.server_latency_ms != int(goal.server_latency_ms):
        settings.server_target_latency_ns = int(goal.server_latency_ms * 1e6)
    return settings


def verdict(summary: loadgen_log.Summary | None, outdir: Path) -> None:
    """Raise InvalidResult with LoadGen's reasons (and the errors it logged) when the test was
    not VALID or logged an error."""
    errors = loadgen_log.detail_errors(outdir / "mlperf_log_detail.txt")
    if (summary is not None and summary.valid is False) or errors:
        reasons = (summary.reasons if summary else []) + errors
        raise InvalidResult("LoadGen: INVALID: " + "; ".join(reasons or ["no reason given"]))


def accuracy(work: Workload, outdir: Path) -> dict[str, float]:
    """The accuracy log scored as accuracy-squad.py scores it; raises below the target."""
    outputs = loadgen_log.read_accuracy(outdir / "mlperf_log_accuracy.json")
    f1 = mlperf_squad.score(work.dataset, outputs)
    figures = {
        "f1": f1,
        "reference_f1": work.reference_f1,
        "f1_of_reference": 100 * f1 / work.reference_f1,
    }
    if f1 < ACCURACY_TARGET * work.reference_f1:
        raise InvalidResult(
            f"accuracy: F1 {f1:.3f} % is below {100 * ACCURACY_TARGET:.0f} % of the FP32 "
            f"reference's {work.reference_f1:.3f} %"
        )
    return figures


def run(
    scenario: str = "Offline",
    mode: str = "performance",
    backend: str = "pytorch",
    precision: str = "fp32",
    device: str = "cpu",
    rules: str = "local",
    samples: int = 512,
    train_steps: int = 600,
    batch_size: int = 32,
    target_qps: float = 0.0,
    target_latency_ms: float = 0.0,
    server_fraction: float = 0.25,
    server_latency_ms: float = 0.0,
    seed: int = 0,
    threads: int = 1,
    model_path: str = "",
    dataset_path: str = "",
) -> dict[str, float | str]:
    """One LoadGen test of `scenario` in `mode`; its files in `<scenario>_<mode>/`."""
    if model_path:
        mlperf_reference.load(model_path, dataset_path)
    _threads(threads)
    here, which, how = Path.cwd(), Scenario(scenario), Mode(mode)
    goal = targets(here, target_qps, target_latency_ms, server_fraction, server_latency_ms)
    outdir = here / f"{which.value}_{how.value}"
    outdir.mkdir(exist_ok=True)
    conf = outdir / "user.conf"
    conf.write_text(user_conf(which, Rules(rules), goal, samples))
    work = workload(backend, precision, device, samples, train_steps, seed, here)
    sut = SystemUnderTest(work, 8 if which is Scenario.MULTI_STREAM else batch_size)
    try:
        sut.test(loadgen_settings(which, how, conf, goal), outdir)
    finally:
        sut.close()
    if how is Mode.ACCURACY:
        verdict(None, outdir)
        return {**accuracy(work, outdir), "result": "VALID"}
    summary = loadgen_log.read_summary(outdir / "mlperf_log_summary.txt")
    verdict(summary, outdir)
    target = float(summary.settings.get("target_qps", 0.0))
    return {**summary.figures, "target_qps": target, "result": "VALID"}


# The figures run returns (benchmarks/mlperf_inference.yaml lists them in its step, with `result`):
# a literal, so that `--no-eval` reads it; loadgen_log.FIGURE_UNITS's and the accuracy's.
run.caramel_figures = {  # type: ignore[attr-defined]
    "samples_per_s": ("samples/s", "higher"),
    "scheduled_queries_per_s": ("queries/s", "higher"),
    "latency_min_ms": ("ms", "lower"),
    "latency_mean_ms": ("ms", "lower"),
    "latency_max_ms": ("ms", "lower"),
    "latency_p50_ms": ("ms", "lower"),
    "latency_p90_ms": ("ms", "lower"),
    "latency_p99_ms": ("ms", "lower"),
    "target_qps": "samples/s",
    "f1": ("%", "higher"),
    "reference_f1": ("%", "higher"),
    "f1_of_reference": ("%", "higher"),
}
