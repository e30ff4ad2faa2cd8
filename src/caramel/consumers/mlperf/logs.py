"""MLPerf's log lines (`:::MLLOG {json}`, LoadGen's mlperf_log_detail.txt and the trainers'
mlperf_log.txt) read into their keys, and the logs a run's work folders hold.

LoadGen names its files itself (mlperf_log_summary.txt, mlperf_log_detail.txt,
mlperf_log_accuracy.json in its output folder); the scenario and mode of a folder are the ones its
detail log says it ran (`effective_scenario`, `effective_test_mode`), wherever a payload put it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caramel.errors import RunError

MARKER = ":::MLLOG"
SUMMARY, DETAIL, ACCURACY_JSON = (
    "mlperf_log_summary.txt",
    "mlperf_log_detail.txt",
    "mlperf_log_accuracy.json",
)
TRAINING_LOG = "mlperf_log.txt"  # what the trainers' --mllog-file is given by the shipped files


class LogError(RunError):
    """A log line that is not MLPerf's: the message names the file and line."""


def read_log(path: Path) -> dict[str, list[Any]]:
    """Every `:::MLLOG` line's value by its key, in the order written; other lines are skipped (a
    trainer's log may hold both), a marked line that is no JSON object with a key is an error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LogError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    found: dict[str, list[Any]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        record = _record(path, number, line)
        if record is not None:
            found.setdefault(record["key"], []).append(record.get("value"))
    return found


def _record(path: Path, number: int, line: str) -> dict[str, Any] | None:
    """The JSON object after line `number`'s marker (None: a line without one); a marked line that
    is no JSON object with a string "key" is an error naming the file and line."""
    start = line.find(MARKER)
    if start < 0:
        return None
    try:
        record = json.loads(line[start + len(MARKER) :])
    except json.JSONDecodeError as exc:
        raise LogError(f"{path}:{number}: not a JSON object after {MARKER} ({exc.msg})") from None
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        raise LogError(f'{path}:{number}: expected a JSON object with a "key" after {MARKER}')
    return record


def first(log: dict[str, list[Any]], key: str, default: Any = None) -> Any:
    """The value of the first line with `key` (LoadGen writes most keys once)."""
    values = log.get(key)
    return values[0] if values else default


@dataclass(frozen=True)
class LoadGenOutput:
    """One LoadGen test's output folder: what it ran (scenario, mode) and its detail log's keys."""

    folder: Path
    scenario: str
    mode: str  # PerformanceOnly or AccuracyOnly
    log: dict[str, list[Any]]

    @property
    def valid(self) -> bool:
        return bool(first(self.log, "result_validity") == "VALID")


def loadgen_outputs(work: Path) -> list[LoadGenOutput]:
    """Every LoadGen output folder under a work folder (one per scenario and mode a payload ran)."""
    found = []
    for root, _dirs, files in sorted(os.walk(work)):
        if DETAIL not in files:
            continue
        log = read_log(Path(root) / DETAIL)
        scenario, mode = first(log, "effective_scenario"), first(log, "effective_test_mode")
        if isinstance(scenario, str) and isinstance(mode, str):
            found.append(LoadGenOutput(Path(root), scenario, mode, log))
    return found


def training_logs(work: Path) -> list[Path]:
    """The trainers' MLPerf logs under a work folder (logs that name their benchmark)."""
    return sorted(
        path for path in work.rglob(TRAINING_LOG) if "submission_benchmark" in read_log(path)
    )
