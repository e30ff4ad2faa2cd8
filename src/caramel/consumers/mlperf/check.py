"""The checks MLCommons' submission checker makes of a tree's structure and logs, read from its
rules (tools/submission/submission_checker: constants.py's required files and fields, the
performance, accuracy, measurements and system checks) and made here, each problem naming its file.

Checked: the division is closed or open; code/, systems/ and results/ exist; every system in
results/ has its description with the required fields (status available/preview/rdi, system type
datacenter/edge, division and submitter as the path says, no network mode in the closed division);
every scenario has performance/run_1's summary and detail logs, a detail log that says this
scenario in PerformanceOnly mode and VALID, accuracy/'s four files (summary, detail, accuracy.txt
with its hash line, the accuracy log within 10 KiB) from an AccuracyOnly test, and its
measurements folder (the JSON with the required keys, a user.conf and a README.md, not empty); a
training benchmark's result_N.txt files are MLPerf logs with run_start and run_stop. Not checked:
the per-benchmark rules of the closed division (required scenarios, accuracy targets, minimum
durations and query counts, seeds), the compliance tests (TEST0x) and power.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caramel.consumers.mlperf.logs import (
    ACCURACY_JSON,
    DETAIL,
    SUMMARY,
    LogError,
    first,
    read_log,
)
from caramel.consumers.mlperf.system import REQUIRED_FIELDS
from caramel.consumers.mlperf.tree import ACCURACY_TEXT, MEASUREMENT_KEYS, USER_CONF

DIVISIONS = ("closed", "open")
MAX_ACCURACY_LOG_BYTES = 10 * 1024
STATUSES = ("available", "preview", "rdi")
SYSTEM_TYPES = ("datacenter", "edge", "datacenter,edge", "edge,datacenter")
HASH_LINE = re.compile(r"^hash=\w+$", re.MULTILINE)
# the fields the checker wants a meaningful (non-empty) answer for
MEANINGFUL_FIELDS = (
    "division",
    "submitter",
    "system_type",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_memory_configuration",
    "host_storage_capacity",
    "host_storage_type",
    "host_networking",
    "host_network_card_count",
    "host_networking_topology",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "accelerator_host_interconnect",
    "accelerator_memory_configuration",
    "accelerator_interconnect",
    "cooling",
    "framework",
    "operating_system",
    "other_software_stack",
)


@dataclass(frozen=True)
class Problem:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def check_tree(root: Path) -> list[Problem]:
    """Every problem of the submission tree under `root` (DIVISION/SUBMITTER/...)."""
    problems: list[Problem] = []
    divisions = dirs(root)
    if not divisions:
        return [Problem(root, "no division folder (closed or open)")]
    for division in divisions:
        if division.name not in DIVISIONS:
            problems.append(Problem(division, "expected a division: closed or open"))
            continue
        for submitter in dirs(division):
            problems += check_submitter(submitter)
    return problems


def check_submitter(base: Path) -> list[Problem]:
    problems = [
        Problem(base / name, "missing folder")
        for name in ("code", "results", "systems")
        if not (base / name).is_dir()
    ]
    for system in dirs(base / "results"):
        problems += check_system(base / "systems" / f"{system.name}.json", base)
        for benchmark in dirs(system):
            problems += check_benchmark(benchmark, base)
    return problems


def check_system(path: Path, base: Path) -> list[Problem]:
    """The system description: present, JSON, every required field, sound values."""
    described = _system_description(path)
    if isinstance(described, Problem):
        return [described]
    return (
        _missing_fields(path, described)
        + _empty_fields(path, described)
        + _unexpected_values(path, described, base)
        + _network_in_closed(path, described, base)
    )


def _system_description(path: Path) -> dict[str, Any] | Problem:
    """The system description as read, or why it cannot be: missing, no JSON, no JSON object."""
    try:
        described = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Problem(path, "missing system description")
    except (OSError, ValueError) as exc:
        return Problem(path, f"not a JSON system description ({exc})")
    if not isinstance(described, dict):
        return Problem(path, "expected a JSON object")
    return described


def _missing_fields(path: Path, described: dict[str, Any]) -> list[Problem]:
    return [
        Problem(path, f"field {key} is missing") for key in REQUIRED_FIELDS if key not in described
    ]


def _empty_fields(path: Path, described: dict[str, Any]) -> list[Problem]:
    """The fields the checker wants a meaningful answer for that are present and empty."""
    return [
        Problem(path, f"field {key} has no meaningful value")
        for key in MEANINGFUL_FIELDS
        if key in described and described[key] in ("", None)
    ]


def _unexpected_values(path: Path, described: dict[str, Any], base: Path) -> list[Problem]:
    """A status or system type the checker does not know, a division or submitter other than the
    tree's path says (each where present)."""
    division, submitter = base.parent.name, base.name
    expected = {
        "status": (described.get("status") in STATUSES, f"one of {', '.join(STATUSES)}"),
        "system_type": (
            described.get("system_type") in SYSTEM_TYPES,
            f"one of {', '.join(SYSTEM_TYPES)}",
        ),
        "division": (str(described.get("division", "")).lower() == division, division),
        "submitter": (str(described.get("submitter", "")).lower() == submitter.lower(), submitter),
    }
    return [
        Problem(path, f"field {key} is {described.get(key)!r}, expected {what}")
        for key, (good, what) in expected.items()
        if key in described and not good
    ]


def _network_in_closed(path: Path, described: dict[str, Any], base: Path) -> list[Problem]:
    """The closed division has no network mode."""
    if base.parent.name == "closed" and described.get("is_network"):
        return [Problem(path, "is_network is true: the closed division has no network mode")]
    return []


def check_benchmark(folder: Path, base: Path) -> list[Problem]:
    results = sorted(folder.glob("result_*.txt"))
    if results:
        return [problem for path in results for problem in check_training_log(path)]
    problems: list[Problem] = []
    for scenario in dirs(folder):
        problems += check_performance(scenario)
        problems += check_accuracy(scenario)
        measured = base / "measurements" / folder.parent.name / folder.name / scenario.name
        problems += check_measurements(measured)
    return problems


def missing_files(folder: Path, names: tuple[str, ...]) -> list[Problem]:
    return [
        Problem(folder / name, "missing" if not (folder / name).exists() else "empty")
        for name in names
        if not (folder / name).is_file() or (folder / name).stat().st_size == 0
    ]


def loadgen_log(
    path: Path, scenario: str, mode: str
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The detail log's keys, with a problem where it is unreadable or ran another test."""
    try:
        log = read_log(path)
    except LogError as exc:
        return None, [Problem(path, str(exc).removeprefix(f"{path}").lstrip(": "))]
    problems = []
    if first(log, "effective_scenario") != scenario:
        problems.append(
            Problem(path, f"ran scenario {first(log, 'effective_scenario')!r}, expected {scenario}")
        )
    if first(log, "effective_test_mode") != mode:
        problems.append(
            Problem(path, f"ran mode {first(log, 'effective_test_mode')!r}, expected {mode}")
        )
    return log, problems


def check_performance(scenario: Path) -> list[Problem]:
    run = scenario / "performance" / "run_1"
    problems = missing_files(run, (SUMMARY, DETAIL))
    if (run / DETAIL).is_file():
        log, found = loadgen_log(run / DETAIL, scenario.name, "PerformanceOnly")
        problems += found
        if log is not None and first(log, "result_validity") != "VALID":
            reason = first(log, "result_invalid_reason") or "no reason given"
            problems.append(Problem(run / DETAIL, f"LoadGen's result is INVALID ({reason})"))
    return problems


def check_accuracy(scenario: Path) -> list[Problem]:
    folder = scenario / "accuracy"
    problems = missing_files(folder, (SUMMARY, DETAIL, ACCURACY_TEXT, ACCURACY_JSON))
    if (folder / DETAIL).is_file():
        problems += loadgen_log(folder / DETAIL, scenario.name, "AccuracyOnly")[1]
    if (folder / ACCURACY_JSON).is_file() and (
        folder / ACCURACY_JSON
    ).stat().st_size > MAX_ACCURACY_LOG_BYTES:
        problems.append(Problem(folder / ACCURACY_JSON, "not truncated (over 10 KiB)"))
    text = folder / ACCURACY_TEXT
    if text.is_file() and not HASH_LINE.search(text.read_text(encoding="utf-8", errors="replace")):
        problems.append(Problem(text, "no hash= line (the accuracy log's SHA-256)"))
    return problems


def check_measurements(folder: Path) -> list[Problem]:
    if not folder.is_dir():
        return [Problem(folder, "missing measurements folder")]
    problems = missing_files(folder, (USER_CONF, "README.md"))
    described = sorted(folder.glob(f"{folder.parent.parent.name}*.json"))
    if not described:
        return problems + [
            Problem(folder, f"no {folder.parent.parent.name}_*.json measurements file")
        ]
    return problems + _measurement_fields(described[0])


def _measurement_fields(path: Path) -> list[Problem]:
    """The measurements JSON: readable JSON with every required key set."""
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [Problem(path, f"not JSON ({exc})")]
    return [
        Problem(path, f"field {key} is missing or empty")
        for key in MEASUREMENT_KEYS
        if not isinstance(fields, dict) or not fields.get(key)
    ]


def check_training_log(path: Path) -> list[Problem]:
    try:
        log = read_log(path)
    except LogError as exc:
        return [Problem(path, str(exc).removeprefix(f"{path}").lstrip(": "))]
    return [Problem(path, f"no {key} line") for key in ("run_start", "run_stop") if key not in log]
