"""LoadGen's own words as figures: `mlperf_log_summary.txt`, `mlperf_log_detail.txt` and
`mlperf_log_accuracy.json` read into numbers with units, a verdict and LoadGen's reasons.

The summary's layout is what `PerformanceSummary::LogSummary` in MLCommons' `loadgen/results.cc`
writes: `key : value` lines in three sections (the results, "Additional Stats", "Test Parameters
Used"); latencies in nanoseconds (given here in milliseconds); "Result is : VALID|INVALID" followed
by one "satisfied : Yes|NO" line per constraint and, when invalid, LoadGen's recommendations.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# A `key : value` line (LoadGen pads the key with spaces; "Samples per second:" has none before ':')
_LINE = re.compile(r"^\s*(?P<key>[^:]*?)\s*:\s*(?P<value>.*?)\s*$")
_PERCENTILE = re.compile(r"^(?P<p>\d+(?:\.\d+)?) percentile latency \(ns\)$")

# LoadGen's throughput line in each scenario (results.cc); SingleStream's is "QPS w/ loadgen
# overhead" (one sample a query), MultiStream has none.
_THROUGHPUT = ("Samples per second", "Completed samples per second", "QPS w/ loadgen overhead")
_LATENCIES = {"Min latency (ns)": "min", "Mean latency (ns)": "mean", "Max latency (ns)": "max"}

# The figures `figures()` gives, with their units and directions (higher or lower is better).
FIGURE_UNITS: dict[str, tuple[str, str]] = {
    "samples_per_s": ("samples/s", "higher"),
    "scheduled_queries_per_s": ("queries/s", "higher"),
    "latency_min_ms": ("ms", "lower"),
    "latency_mean_ms": ("ms", "lower"),
    "latency_max_ms": ("ms", "lower"),
    "latency_p50_ms": ("ms", "lower"),
    "latency_p90_ms": ("ms", "lower"),
    "latency_p99_ms": ("ms", "lower"),
}


class LogError(ValueError):
    """A LoadGen log caramel cannot read: names the file, the line and what was expected."""


@dataclass(frozen=True)
class Summary:
    """One `mlperf_log_summary.txt`."""

    scenario: str
    mode: str
    valid: bool | None  # None: no "Result is" line (an accuracy run's summary has none)
    figures: dict[str, float]
    reasons: list[str] = field(default_factory=list)  # why INVALID, in LoadGen's words
    settings: dict[str, str] = field(default_factory=dict)  # "Test Parameters Used"


def _pairs(
    path: Path, text: str
) -> tuple[dict[str, tuple[int, str]], list[str], dict[str, list[str]]]:
    """Each `key : value` line's value and line number (the first of a key), the constraint lines,
    and the ` * ` lines of the "Recommendations:" and "Early Stopping Result:" blocks."""
    pairs: dict[str, tuple[int, str]] = {}
    constraints: list[str] = []
    blocks: dict[str, list[str]] = {"Recommendations:": [], "Early Stopping Result:": []}
    block = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped in blocks:
            block = stripped
            continue
        if block and _block_line(line):
            blocks[block].append(stripped.lstrip("* "))
            continue
        block = ""
        pair = _pair(line)
        if pair is None:
            continue
        key, value = pair
        if key.endswith("satisfied"):
            constraints.append(f"{key}: {value}")
        pairs.setdefault(key, (number, value))
    return pairs, constraints, blocks


def _block_line(line: str) -> bool:
    """Whether a line continues a block: a ` * ` item, or an indented line."""
    stripped = line.strip()
    return stripped.startswith("*") or line.startswith(" ") and bool(stripped)


def _pair(line: str) -> tuple[str, str] | None:
    """A `key : value` line's key and value; None for another line."""
    match = _LINE.match(line)
    if not match or not match["key"]:
        return None
    return match["key"], match["value"]


def _number(path: Path, pairs: dict[str, tuple[int, str]], key: str) -> float:
    number, value = pairs[key]
    try:
        return float(value)
    except ValueError:
        raise LogError(f"{path}:{number}: '{key}' is {value!r}, expected a number") from None


def _figures(path: Path, pairs: dict[str, tuple[int, str]]) -> dict[str, float]:
    figures: dict[str, float] = {}
    throughput = next((key for key in _THROUGHPUT if key in pairs), None)
    if throughput is not None:
        figures["samples_per_s"] = _number(path, pairs, throughput)
    if "Scheduled samples per second" in pairs:
        figures["scheduled_queries_per_s"] = _number(path, pairs, "Scheduled samples per second")
    figures.update(_latencies(path, pairs))
    return figures


def _latencies(path: Path, pairs: dict[str, tuple[int, str]]) -> dict[str, float]:
    """The minimum, mean and maximum latency and its 50th, 90th and 99th percentiles, in ms."""
    figures = {
        f"latency_{name}_ms": _number(path, pairs, key) / 1e6
        for key, name in _LATENCIES.items()
        if key in pairs
    }
    for key in pairs:
        match = _PERCENTILE.match(key)
        if match and float(match["p"]) in (50.0, 90.0, 99.0):
            figures[f"latency_p{int(float(match['p']))}_ms"] = _number(path, pairs, key) / 1e6
    return figures


def read_summary(path: Path) -> Summary:
    """The summary at `path`: its scenario, mode, verdict, figures, reasons and settings."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise LogError(f"{path}: cannot read LoadGen's summary ({error.strerror})") from None
    pairs, constraints, blocks = _pairs(path, text)
    for key in ("Scenario", "Mode"):
        if key not in pairs:
            raise LogError(
                f"{path}:1: no '{key} : ...' line: expected LoadGen's mlperf_log_summary.txt"
            )
    verdict = _verdict(path, pairs)
    return Summary(
        scenario=pairs["Scenario"][1],
        mode=pairs["Mode"][1],
        valid=None if not verdict else verdict == "VALID",
        figures=_figures(path, pairs),
        reasons=_reasons(constraints, blocks),
        settings=_settings(text),
    )


def _verdict(path: Path, pairs: dict[str, tuple[int, str]]) -> str:
    """The "Result is" line's VALID or INVALID; "" where there is none."""
    verdict = pairs.get("Result is", (0, ""))[1]
    if verdict not in ("", "VALID", "INVALID"):
        number = pairs["Result is"][0]
        raise LogError(f"{path}:{number}: 'Result is : {verdict}', expected VALID or INVALID")
    return verdict


def _reasons(constraints: list[str], blocks: dict[str, list[str]]) -> list[str]:
    """Why the run is invalid: its unmet constraints, LoadGen's recommendations, and where early
    stopping was not satisfied, what it says of that."""
    reasons = [line for line in constraints if line.endswith(": NO")] + blocks["Recommendations:"]
    if "Early stopping satisfied: NO" in reasons:
        reasons += blocks["Early Stopping Result:"]
    return reasons


def _settings(text: str) -> dict[str, str]:
    """The `key : value` lines under "Test Parameters Used" (its heading and rule skipped)."""
    start = text.find("Test Parameters Used")
    if start < 0:
        return {}
    pairs = (_pair(line) for line in text[start:].splitlines()[2:])
    return dict(pair for pair in pairs if pair is not None)


def detail_errors(path: Path) -> list[str]:
    """The errors LoadGen logged in `mlperf_log_detail.txt` (`:::MLLOG` lines whose metadata says
    `is_error`), as "key: value"; a line that is not JSON is named by file and line."""
    errors: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith(":::MLLOG "):
            continue
        try:
            record = json.loads(line[len(":::MLLOG ") :])
        except json.JSONDecodeError as error:
            raise LogError(
                f"{path}:{number}: not a JSON record after ':::MLLOG' ({error.msg})"
            ) from None
        if record.get("metadata", {}).get("is_error"):
            errors.append(f"{record.get('key')}: {record.get('value')}")
    return errors


def read_accuracy(path: Path, dtype: str = "float32") -> dict[int, np.ndarray]:
    """`mlperf_log_accuracy.json`'s responses: each sample's (qsl_idx) output as a `(-1, 2)` array,
    decoded as accuracy-squad.py's load_loadgen_log decodes it (hex bytes of `dtype`)."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise LogError(f"{path}:{error.lineno}: not JSON ({error.msg})") from None
    outputs: dict[int, np.ndarray] = {}
    for number, record in enumerate(records):
        try:
            data = np.frombuffer(bytes.fromhex(record["data"]), dtype)
            outputs[int(record["qsl_idx"])] = data.reshape(-1, 2)
        except (KeyError, TypeError, ValueError) as error:
            raise LogError(
                f"{path}: record {number}: expected qsl_idx and hex data of {dtype} pairs ({error})"
            ) from None
    return outputs
