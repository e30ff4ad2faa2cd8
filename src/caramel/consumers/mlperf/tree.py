"""MLCommons' submission tree written from caramel runs.

The layout is the one MLCommons' submission checker reads for the v5.x rounds
(submission_checker/constants.py: PERFORMANCE_LOG_PATH, ACCURACY_LOG_PATH, MEASUREMENTS_PATH,
SYSTEM_PATH, SRC_PATH for "v5.1"):

    DIVISION/SUBMITTER/code/BENCHMARK/README.md
    DIVISION/SUBMITTER/systems/SYSTEM.json
    DIVISION/SUBMITTER/measurements/SYSTEM/BENCHMARK/SCENARIO/{SYSTEM_caramel_SCENARIO.json,
        user.conf, mlperf.conf, README.md}
    DIVISION/SUBMITTER/results/SYSTEM/BENCHMARK/SCENARIO/performance/run_1/mlperf_log_*.txt
    DIVISION/SUBMITTER/results/SYSTEM/BENCHMARK/SCENARIO/accuracy/{mlperf_log_*.txt,
        mlperf_log_accuracy.json, accuracy.txt}
    DIVISION/SUBMITTER/results/SYSTEM/BENCHMARK/result_N.txt      (a training run's MLPerf log)

The accuracy log is kept as MLCommons' truncate_accuracy_log.py keeps it: its SHA-256 appended to
accuracy.txt as `hash=...`, and a log of 4096 bytes or more cut to its first and last 4096
characters.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caramel.consumers.mlperf.logs import (
    ACCURACY_JSON,
    DETAIL,
    SUMMARY,
    LoadGenOutput,
    first,
    loadgen_outputs,
    read_log,
    training_logs,
)

VIEWABLE_SIZE = 4096  # what truncate_accuracy_log.py keeps of each end of a long accuracy log
ACCURACY_TEXT = "accuracy.txt"  # the scored accuracy, as the reference accuracy script prints it
USER_CONF, MLPERF_CONF = "user.conf", "mlperf.conf"
# the keys of the measurements JSON the checker requires (SYSTEM_IMP_REQUIRED_FILES)
MEASUREMENT_KEYS = (
    "input_data_types",
    "retraining",
    "starting_weights_filename",
    "weight_data_types",
    "weight_transformations",
)


@dataclass
class Scenario:
    """One benchmark's scenario in a submission: its performance and accuracy tests."""

    benchmark: str
    scenario: str
    params: dict[str, str]
    source: str  # the caramel benchmark that ran it
    performance: LoadGenOutput | None = None
    accuracy: LoadGenOutput | None = None


@dataclass
class Gathered:
    """What caramel runs hold for a submission: LoadGen tests by (benchmark, scenario), and
    training logs by benchmark."""

    scenarios: dict[tuple[str, str], Scenario] = field(default_factory=dict)
    training: dict[str, list[Path]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # MLPerf benchmark: caramel benchmark

    def add_test(
        self, benchmark: str, params: dict[str, str], test: LoadGenOutput, source: str
    ) -> None:
        """The test under its scenario; a later test of the same mode replaces an earlier one (the
        runs are given oldest first, so a re-run wins)."""
        self.sources[benchmark] = source
        entry = self.scenarios.setdefault(
            (benchmark, test.scenario), Scenario(benchmark, test.scenario, params, source)
        )
        if test.mode == "AccuracyOnly":
            entry.accuracy = test
        else:
            entry.performance, entry.params = test, params

    def empty(self) -> bool:
        return not self.scenarios and not self.training


def benchmark_name(params: dict[str, str], fallback: str) -> str:
    """The MLPerf benchmark a workpackage ran: its `mlperf_model` parameter, else `model`, else
    the caramel benchmark's name."""
    return params.get("mlperf_model") or params.get("model") or fallback


def gather(work_folders: Iterable[tuple[Path, dict[str, str], str]]) -> Gathered:
    """The LoadGen tests and training logs of (work folder, its params, the caramel benchmark)."""
    gathered = Gathered()
    for work, params, source in work_folders:
        if not work.is_dir():
            continue
        for test in loadgen_outputs(work):
            gathered.add_test(benchmark_name(params, source), params, test, source)
        for log in training_logs(work):
            benchmark = str(first(read_log(log), "submission_benchmark"))
            gathered.training.setdefault(benchmark, []).append(log)
            gathered.sources[benchmark] = source
    return gathered


@dataclass(frozen=True)
class Destination:
    root: Path
    division: str
    submitter: str
    system: str

    @property
    def base(self) -> Path:
        return self.root / self.division / self.submitter


def copy_into(folder: Path, files: Iterable[Path]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        shutil.copyfile(path, folder / path.name)


def keep_accuracy_log(source: Path, folder: Path) -> str:
    """The accuracy log copied, cut as truncate_accuracy_log.py cuts it; returns the SHA-256 of
    the whole log."""
    raw = source.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    text = raw.decode("utf-8", errors="replace")
    if len(raw) >= VIEWABLE_SIZE:  # truncate_file keeps only a log under 4096 bytes whole
        text = text[:VIEWABLE_SIZE] + "\n\n...\n\n" + text[-VIEWABLE_SIZE:]
    (folder / ACCURACY_JSON).write_text(text, encoding="utf-8")
    return digest


def write_accuracy(test: LoadGenOutput, folder: Path) -> None:
    """accuracy/: LoadGen's logs, the accuracy log kept with its hash, and accuracy.txt (the
    payload's scored accuracy where it wrote one beside the logs; without it none is made up)."""
    copy_into(
        folder, [test.folder / name for name in (SUMMARY, DETAIL) if (test.folder / name).is_file()]
    )
    log = test.folder / ACCURACY_JSON
    if not log.is_file():
        return
    digest = keep_accuracy_log(log, folder)
    scored = test.folder / ACCURACY_TEXT
    if scored.is_file():
        text = scored.read_text(encoding="utf-8", errors="replace").rstrip("\n")
        (folder / ACCURACY_TEXT).write_text(f"{text}\nhash={digest}\n", encoding="utf-8")


def user_conf(entry: Scenario, test: LoadGenOutput) -> str:
    """The user.conf the test ran with: the one beside its logs or in its work folder, else
    LoadGen's own effective settings written in user.conf's syntax (model.Scenario.key = value)."""
    for folder in (test.folder, test.folder.parent):
        if (folder / USER_CONF).is_file():
            return (folder / USER_CONF).read_text(encoding="utf-8", errors="replace")
    settings = {
        "target_qps": first(test.log, "effective_target_qps"),
        "target_latency": _ms(first(test.log, "effective_target_latency_ns")),
        "min_duration": first(test.log, "effective_min_duration_ms"),
        "min_query_count": first(test.log, "effective_min_query_count"),
        "performance_sample_count_override": first(test.log, "effective_performance_sample_count"),
    }
    return "".join(
        f"{entry.benchmark}.{entry.scenario}.{key} = {value}\n"
        for key, value in settings.items()
        if value is not None
    )


def _ms(nanoseconds: Any) -> int | None:
    return None if nanoseconds is None else int(nanoseconds) // 1_000_000


def write_measurements(entry: Scenario, where: Destination) -> None:
    folder = where.base / "measurements" / where.system / entry.benchmark / entry.scenario
    folder.mkdir(parents=True, exist_ok=True)
    test = entry.performance or entry.accuracy
    assert test is not None  # a scenario is made by its first test
    name = f"{where.system}_caramel_{entry.scenario}.json"
    (folder / name).write_text(json.dumps(_measurements(entry), indent=2) + "\n", encoding="utf-8")
    (folder / USER_CONF).write_text(user_conf(entry, test), encoding="utf-8")
    _copy_mlperf_conf(test, folder)
    (folder / "README.md").write_text(
        f"# {entry.benchmark}, {entry.scenario}\n\nRun by caramel's benchmark "
        f"`{entry.source}` (bench run {entry.source}); LoadGen's logs in results/.\n",
        encoding="utf-8",
    )


def _measurements(entry: Scenario) -> dict[str, str]:
    """The measurements JSON: the data and weight types (the run's precision) and the weights."""
    precision = entry.params.get("precision") or "fp32"
    return {
        "input_data_types": precision,
        "retraining": "no",
        "starting_weights_filename": entry.params.get("model_path")
        or "caramel's own model, built and trained by the run",
        "weight_data_types": precision,
        "weight_transformations": "none",
    }


def _copy_mlperf_conf(test: LoadGenOutput, folder: Path) -> None:
    """The mlperf.conf the test ran with (in its output folder or the one above), if any."""
    for candidate in (test.folder / MLPERF_CONF, test.folder.parent / MLPERF_CONF):
        if candidate.is_file():
            shutil.copyfile(candidate, folder / MLPERF_CONF)
            return


def write_scenario(entry: Scenario, where: Destination) -> None:
    results = where.base / "results" / where.system / entry.benchmark / entry.scenario
    if entry.performance is not None:
        test = entry.performance
        copy_into(
            results / "performance" / "run_1",
            [test.folder / name for name in (SUMMARY, DETAIL) if (test.folder / name).is_file()],
        )
    if entry.accuracy is not None:
        write_accuracy(entry.accuracy, results / "accuracy")
    write_measurements(entry, where)


def write_training(benchmark: str, logs: list[Path], where: Destination) -> None:
    """A training benchmark's logs as MLPerf training's results/SYSTEM/BENCHMARK/result_N.txt."""
    folder = where.base / "results" / where.system / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    for number, log in enumerate(logs):
        shutil.copyfile(log, folder / f"result_{number}.txt")


def write_code(sources: dict[str, str], where: Destination) -> None:
    """code/BENCHMARK/README.md: which caramel benchmark is the implementation."""
    from caramel import __version__

    for benchmark, caramel_benchmark in sorted(sources.items()):
        folder = where.base / "code" / benchmark
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "README.md").write_text(
            f"# {benchmark}\n\nThe implementation is caramel {__version__}'s shipped benchmark "
            f"`{caramel_benchmark}` (https://pypi.org/project/caramel/): `bench run "
            f"{caramel_benchmark}` runs it, `bench mlperf submit` wrote this tree.\n",
            encoding="utf-8",
        )


def write_tree(
    gathered: Gathered, where: Destination, system_description: dict[str, Any]
) -> list[Path]:
    """Write the submission; returns the files written (relative to the tree's root)."""
    systems = where.base / "systems"
    systems.mkdir(parents=True, exist_ok=True)
    (systems / f"{where.system}.json").write_text(
        json.dumps(system_description, indent=2) + "\n", encoding="utf-8"
    )
    for entry in gathered.scenarios.values():
        write_scenario(entry, where)
    for benchmark, logs in gathered.training.items():
        write_training(benchmark, logs, where)
    write_code(gathered.sources, where)
    return sorted(p.relative_to(where.root) for p in where.base.rglob("*") if p.is_file())
