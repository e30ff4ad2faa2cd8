"""MAD's contract between a script and the tool: a `performance: NUMBER UNIT` line, or a results CSV.

A benchmark with no pattern at all needs no patternset: every `performance: 3.06 examples/sec`
line in a workpackage's stdout is a figure (MAD's form), and so is every row of a
`multiple_results` CSV that the benchmark's metadata names. The CSV's columns are
`model,performance,metric` (MAD's scripts and madengine) or `models,performance,metric` (MAD's
README); further columns are kept with each figure. It is read from the work folder, then from the
folder a MAD model runs in (`mad_model_dir`, the clone: a script there writes `../NAME.csv` into the
work folder, or `NAME.csv` beside itself). A number that does not parse is reported with the
workpackage, the file and the line, and left out.

A finished workpackage of a last step (one no other step depends on) that gave no figure is MAD's
FAILURE: `collect(inp).missing` holds the reason for each, so the table and perf.csv keep it.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field

from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
from caramel.stages.spec.mad import ENV_FILE as MAD_ENV_FILE
from caramel.stages.spec.mad import MODEL_DIR_PARAMETER
from caramel.stages.spec.units import unreadable_units
from caramel.vocabulary import WpState

LINE = re.compile(r"^\s*performance:\s*(\S+)\s*(.*?)\s*$")
MODEL_COLUMNS = ("model", "models")  # madengine and MAD's scripts write `model`, MAD's README `models`


@dataclass
class Figure:
    wp: WPRecord
    model: str
    performance: float
    metric: str
    source: str  # file:line it came from
    extra: dict[str, str] = field(default_factory=dict)  # a results CSV's further columns


@dataclass
class Collected:
    figures: list[Figure]
    problems: list[str]  # what could not be read, one line each
    missing: dict[int, str]  # workpackage id -> why it has no figure (MAD's FAILURE)


def uses_performance_lines(inp: AnalysisInput) -> bool:
    """No pattern anywhere in the benchmark: its figures are its `performance:` lines."""
    return not any(pset.patterns for pset in inp.benchmark.patternsets.values())


def collect_figures(inp: AnalysisInput) -> tuple[list[Figure], list[str]]:
    """Every figure of every started workpackage, and what could not be read (one line each)."""
    found = collect(inp)
    return found.figures, found.problems


def results_csv_name(inp: AnalysisInput) -> str:
    return inp.benchmark.meta.multiple_results or ""


def collect(inp: AnalysisInput) -> Collected:
    """The figures, the problems, and why each finished workpackage of a last step has no figure."""
    found = Collected([], [], {})
    csv_name = results_csv_name(inp)
    varying = {step: varying_parameters(inp, step) for step in {wp.step for wp in inp.workpackages}}
    last = last_steps(inp)
    for wp in inp.workpackages:
        if not wp.started:
            continue
        model = model_name(inp.benchmark.name, wp, varying[wp.step])
        before, line_notes, csv_notes = len(found.figures), list[str](), list[str]()
        for name in _stdout_files(inp, wp):
            found.figures += _from_lines(wp, model, os.path.join(wp.work_dir, name), found.problems, line_notes)
        if csv_name:
            path = results_csv_path(wp, csv_name)
            if path:
                found.figures += _from_csv(wp, path, found.problems, csv_notes)
            else:
                csv_notes.append(f"no {csv_name} in the work folder" +
                                 (f" nor in {wp.params[MODEL_DIR_PARAMETER]}/" if wp.params.get(MODEL_DIR_PARAMETER) else ""))
        if len(found.figures) == before and wp.state == WpState.DONE and wp.step in last:
            notes = (line_notes or ["the script printed no 'performance: NUMBER UNIT' line"]) + csv_notes
            found.missing[wp.id] = "no figure: " + "; ".join(notes)
    found.problems += unreadable_units(found.figures)  # a unit that cannot be read names its file:line
    return found


def last_steps(inp: AnalysisInput) -> set[str]:
    """The steps no other step depends on: those expected to print the figures."""
    steps = inp.benchmark.steps
    needed = {dep for step in steps.values() for dep in step.depend}
    return {name for name in steps if name not in needed}


def results_csv_path(wp: WPRecord, csv_name: str) -> str:
    """Where the results CSV is: the work folder first, then the MAD model's own folder."""
    folders = [wp.work_dir]
    model_dir = wp.params.get(MODEL_DIR_PARAMETER)
    if model_dir:
        folders.append(os.path.join(wp.work_dir, model_dir))
    for folder in folders:
        path = os.path.join(folder, csv_name)
        if os.path.isfile(path):
            return path
    return ""


def mad_environment(wp: WPRecord) -> dict[str, str]:
    """The MAD_* variables a models.json entry's script was given (its work folder's mad.env), or {}."""
    try:
        with open(os.path.join(wp.work_dir, MAD_ENV_FILE), errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in lines if "=" in line)


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


def _from_lines(wp: WPRecord, model: str, path: str, problems: list[str], notes: list[str]) -> list[Figure]:
    out: list[Figure] = []
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
                where = f"{os.path.basename(path)}:{number}"
                problems.append(f"workpackage {wp.id} ({wp.step}): {path}:{number}: {line.strip()!r}: "
                                f"{match.group(1)!r} is not a number; expected 'performance: NUMBER UNIT'")
                notes.append(f"{line.strip()!r} ({where}) has no number")
                continue
            out.append(Figure(wp, model, value, match.group(2), f"{path}:{number}"))
    return out


def _from_csv(wp: WPRecord, path: str, problems: list[str], notes: list[str]) -> list[Figure]:
    out: list[Figure] = []
    with open(path, newline="", errors="replace") as handle:
        reader = csv.DictReader(handle)
        reader.fieldnames = [name.strip() for name in reader.fieldnames or []]
        model_column = next((c for c in MODEL_COLUMNS if c in reader.fieldnames), "")
        missing = [c for c in ("performance", "metric") if c not in reader.fieldnames]
        if missing or not model_column:
            missing = (["model"] if not model_column else []) + missing
            text = (f"{path}: no column {', '.join(missing)} (header: {','.join(reader.fieldnames) or 'none'}); "
                    "expected the columns model,performance,metric (or models,performance,metric)")
            problems.append(f"workpackage {wp.id} ({wp.step}): {text}")
            notes.append(text)
            return out
        known = {model_column, "performance", "metric"}
        for row in reader:
            value = _number((row.get("performance") or "").strip())
            if value is None:
                problems.append(f"workpackage {wp.id} ({wp.step}): {path}:{reader.line_num}: "
                                f"{row.get('performance')!r} is not a number")
                notes.append(f"{os.path.basename(path)}:{reader.line_num}: {row.get('performance')!r} is not a number")
                continue
            extra = {k: (v or "").strip() for k, v in row.items() if k not in known and k is not None}
            out.append(Figure(wp, (row[model_column] or "").strip(), value, (row["metric"] or "").strip(),
                              f"{path}:{reader.line_num}", extra))
    return out


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
