"""MAD's contract between a script and the tool: a `performance: NUMBER UNIT` line.

A benchmark with no pattern at all needs no patternset: every `performance: 3.06 examples/sec`
line in a workpackage's stdout is a figure (MAD's form), and so is every row of a
`multiple_results` CSV (columns `models,performance,metric`) that the benchmark's metadata names,
read from the workpackage's work folder. A number that does not parse is reported with the
workpackage, the file and the line, and left out.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass

from caramel.analyse.inputs import AnalysisInput, WPRecord
from caramel.spec.units import unreadable_units

LINE = re.compile(r"^\s*performance:\s*(\S+)\s*(.*?)\s*$")


@dataclass
class Figure:
    wp: WPRecord
    model: str
    performance: float
    metric: str
    source: str  # file:line it came from


def uses_performance_lines(inp: AnalysisInput) -> bool:
    """No pattern anywhere in the benchmark: its figures are its `performance:` lines."""
    return not any(pset.patterns for pset in inp.benchmark.patternsets.values())


def collect_figures(inp: AnalysisInput) -> tuple[list[Figure], list[str]]:
    """Every figure of every started workpackage, and what could not be read (one line each)."""
    figures: list[Figure] = []
    problems: list[str] = []
    csv_name = str(getattr(getattr(inp.benchmark, "meta", None), "multiple_results", "") or "")
    varying = {step: varying_parameters(inp, step) for step in {wp.step for wp in inp.workpackages}}
    for wp in inp.workpackages:
        if not wp.started:
            continue
        model = model_name(inp.benchmark.name, wp, varying[wp.step])
        for name in _stdout_files(inp, wp):
            figures += _from_lines(wp, model, os.path.join(wp.work_dir, name), problems)
        if csv_name:
            path = os.path.join(wp.work_dir, csv_name)
            if os.path.isfile(path):
                figures += _from_csv(wp, path, problems)
    problems += unreadable_units(figures)  # a unit that cannot be read names its file:line (spec.units)
    return figures, problems


def model_name(benchmark: str, wp: WPRecord, varying: list[str]) -> str:
    """The benchmark's name, with the values of the parameters that differ between its workpackages
    (the model zoo's one name per configuration: `gpt:size=117M`)."""
    detail = ",".join(f"{name}={wp.params.get(name, '')}" for name in varying)
    return f"{benchmark}:{detail}" if detail else benchmark


def varying_parameters(inp: AnalysisInput, step: str) -> list[str]:
    seen: dict[str, set[str]] = {}
    for wp in inp.workpackages:
        if wp.step == step:
            for name, text in wp.params.items():
                seen.setdefault(name, set()).add(text)
    return sorted(n for n, texts in seen.items() if len(texts) > 1 and not n.startswith(("jube_", "caramel_")))


def _stdout_files(inp: AnalysisInput, wp: WPRecord) -> list[str]:
    step = inp.benchmark.steps.get(wp.step)
    names = ["stdout"]
    for do in step.dos if step is not None else []:
        if do.stdout and "$" not in do.stdout and do.stdout not in names:
            names.append(do.stdout)
    return names


def _from_lines(wp: WPRecord, model: str, path: str, problems: list[str]) -> list[Figure]:
    out = []
    try:
        handle = open(path, errors="replace")
    except OSError:
        return out
    with handle:
        for number, line in enumerate(handle, 1):
            match = LINE.match(line)
            if not match:
                continue
            value = _number(match.group(1))
            if value is None:
                problems.append(f"workpackage {wp.id} ({wp.step}): {path}:{number}: {line.strip()!r}: "
                                f"{match.group(1)!r} is not a number; expected 'performance: NUMBER UNIT'")
                continue
            out.append(Figure(wp, model, value, match.group(2), f"{path}:{number}"))
    return out


def _from_csv(wp: WPRecord, path: str, problems: list[str]) -> list[Figure]:
    out = []
    with open(path, newline="", errors="replace") as handle:
        reader = csv.DictReader(handle)
        missing = {"models", "performance", "metric"} - set(reader.fieldnames or [])
        if missing:
            problems.append(f"workpackage {wp.id} ({wp.step}): {path}: no column {', '.join(sorted(missing))}; "
                            "expected the columns models,performance,metric")
            return out
        for row in reader:
            value = _number(row["performance"] or "")
            if value is None:
                problems.append(f"workpackage {wp.id} ({wp.step}): {path}:{reader.line_num}: "
                                f"{row['performance']!r} is not a number")
                continue
            out.append(Figure(wp, row["models"], value, row["metric"] or "", f"{path}:{reader.line_num}"))
    return out


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
