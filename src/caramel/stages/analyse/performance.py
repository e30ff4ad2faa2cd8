"""MAD's contract between a script and the tool: a `performance: NUMBER METRIC` line, or a results
CSV.

A benchmark with no pattern at all needs no patternset: a `performance: 3.06 examples/sec` line in
a workpackage's stdout is a figure (MAD's form), and so is every row of a `multiple_results` CSV
that the benchmark's metadata names. A line reads as madengine reads it (`PERFORMANCE_LINE`). The
CSV's columns are `model,performance,metric`; further columns are kept with each figure. It is read
from the work folder, then from the folder a MAD model runs in (`mad_model_dir`, the clone: a script
there writes `../NAME.csv` into the work folder, or `NAME.csv` beside itself). Every row is a figure
of its own, never merged with another row of the same model and metric (`Figure.model_row`).

A models.json entry (a workpackage with `mad_model_dir`) is read exactly as madengine reads a model
(execution/container_runner.py, `ContainerRunner.run_container`; reporting/update_perf_csv.py,
`handle_multiple_results`): with `multiple_results` its figures are the CSV's rows only, each named
`ENTRY_MODEL`, and the header must name `model`; without it, its one figure is the first match of
the line in its whole stdout, else the first Hugging Face Trainer `train_samples_per_second`. A
benchmark file of caramel's own keeps caramel's rules: every matching line is a figure, the CSV adds
to them, its `model` is the row's own and MAD's README header `models` reads too.

A finished workpackage of a last step (one no other step depends on) that gave no figure is MAD's
FAILURE: `collect(inp).missing` holds the reason for each, so the table and perf.csv keep it; a CSV
row whose performance is empty or not a number is a FAILURE row of its own (`collect(inp).failed`).
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from caramel.stages.analyse.inputs import AnalysisInput, WPRecord

# kept here for its readers; it lives in inputs: `bench result` asks it without this module
from caramel.stages.analyse.inputs import (
    uses_performance_lines as uses_performance_lines,  # noqa: PLC0414
)
from caramel.stages.spec.mad import ENV_FILE as MAD_ENV_FILE
from caramel.stages.spec.mad import MODEL_DIR_PARAMETER
from caramel.stages.spec.units import unreadable_units
from caramel.vocabulary import WpState

# The forms madengine accepts (deployment/base.py, PERFORMANCE_LOG_PATTERN, found by re.search):
# anywhere in the text, "performance:", blanks, a number, then a unit suffix such as "/s" and/or a
# comma, blanks, and the metric: the next word up to a blank or a comma.
PERFORMANCE_LINE = re.compile(
    r"""
    performance: \s+
    (?P<number> [+\-]? (?: [0-9]+ \.? [0-9]* | \. [0-9]+ ) (?: [eE] [+\-]? [0-9]+ )? )
    (?: ,? \s* / [a-zA-Z]+ \s* ,? | , )?
    \s+
    (?P<metric> [^\s,]+ )
    """,
    re.VERBOSE,
)
# madengine's second try when no line matches: the Hugging Face Trainer's figure
TRAINER_FIGURE = re.compile(r"train_samples_per_second['\"\s:=]+(?P<number>[0-9][0-9.eE+-]*)")
TRAINER_METRIC = "samples_per_second"
MODEL_COLUMNS = (
    "model",
    "models",
)  # madengine and MAD's scripts write `model`, MAD's README `models`
MAD_MODEL_COLUMN = "model"  # madengine's handle_multiple_results requires it


@dataclass(frozen=True)
class LineFigure:
    """What madengine reads: the number and metric as written, and where the match starts."""

    number: str
    metric: str
    offset: int


def first_performance(text: str) -> LineFigure | None:
    """madengine's figure of a whole log: the first `performance:` match, else the first Hugging
    Face Trainer `train_samples_per_second`, else None (as container_runner.py reads the log)."""
    found = PERFORMANCE_LINE.search(text)
    if found:
        return LineFigure(found["number"], found["metric"], found.start())
    trainer = TRAINER_FIGURE.search(text)
    return LineFigure(trainer["number"], TRAINER_METRIC, trainer.start()) if trainer else None


@dataclass
class Figure:
    wp: WPRecord
    model: str
    performance: float
    metric: str
    source: str  # file:line it came from
    extra: dict[str, str] = field(default_factory=dict)  # a results CSV's further columns
    model_row: int = 1  # the how-manieth row of its model and metric in its CSV: rows never merge


@dataclass
class FailedRow:
    """A results CSV row without a number: madengine writes it as a FAILURE row of its own."""

    wp: WPRecord
    model: str
    metric: str
    reason: str
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class Collected:
    figures: list[Figure]
    problems: list[str]  # what could not be read, one line each
    missing: dict[int, str]  # workpackage id -> why it has no figure (MAD's FAILURE)
    # CSV rows without a number, of the workpackages that have figures
    failed: list[FailedRow] = field(default_factory=list)


def follows_mad_convention(inp: AnalysisInput, found: Collected) -> bool:
    """Whether a benchmark without patterns is MAD-style, so that `bench result` makes its
    `performance` table: a models.json entry or a declared results CSV (`meta: multiple_results`)
    says so, and so does a `performance:` line in its output (a figure, or a line that does not
    read). A file with neither (JUBE's examples/tagging/tagging.xml) has no table, as `jube result`
    shows none for a file without <result> (JUBE's benchmark.py, `Benchmark.create_result`)."""
    declared = bool(results_csv_name(inp)) or any(
        MODEL_DIR_PARAMETER in wp.params for wp in inp.workpackages
    )
    return declared or bool(found.figures or found.failed or found.problems)


def collect_figures(inp: AnalysisInput) -> tuple[list[Figure], list[str]]:
    """Every figure of every started workpackage, and what could not be read (one line each)."""
    found = collect(inp)
    return found.figures, found.problems


def results_csv_name(inp: AnalysisInput) -> str:
    return inp.benchmark.meta.multiple_results or ""


NO_LINE = "the script printed no 'performance: NUMBER UNIT' line"


@dataclass
class _Reading:
    """What reading one workpackage's output found besides its figures."""

    wp: WPRecord
    problems: list[str]  # the run's, one line each naming the workpackage (Collected.problems)
    notes: list[str] = field(default_factory=list)  # why it has no figure
    failed: list[FailedRow] = field(default_factory=list)  # its CSV rows without a number

    def problem(self, text: str) -> None:
        self.problems.append(f"workpackage {self.wp.id} ({self.wp.step}): {text}")


def collect(inp: AnalysisInput) -> Collected:
    """The figures, the problems, and why each finished workpackage of a last step has no figure."""
    found = Collected([], [], {})
    csv_name = results_csv_name(inp)
    varying = _varying_by_step(inp)
    last = last_steps(inp)
    for wp in inp.workpackages:
        if not wp.started:
            continue
        model = model_name(inp.benchmark.name, wp, varying[wp.step])
        reading = _Reading(wp, found.problems)
        _keep(found, _figures_of(inp, model, csv_name, reading), reading, wp.step in last)
    found.problems += unreadable_units(
        found.figures
    )  # a unit that cannot be read names its file:line
    return found


def _varying_by_step(inp: AnalysisInput) -> dict[str, list[str]]:
    steps = {wp.step for wp in inp.workpackages}
    return {step: varying_parameters(inp, step) for step in steps}


def _figures_of(inp: AnalysisInput, model: str, csv_name: str, reading: _Reading) -> list[Figure]:
    """A workpackage's figures: of its stdout files, of its results CSV, or both (module doc)."""
    mad = MODEL_DIR_PARAMETER in reading.wp.params  # a models.json entry: read as madengine does
    figures: list[Figure] = []
    if not (mad and csv_name):  # madengine reads a model's log only without a results CSV
        figures += _from_log(inp, model, mad, reading)
    if csv_name:
        figures += _csv_figures(csv_name, model if mad else "", reading)
    return figures


def _keep(found: Collected, figures: list[Figure], reading: _Reading, last_step: bool) -> None:
    """A workpackage's figures kept; without any, why, for a finished one of a last step."""
    found.figures += figures
    if figures:  # madengine writes the rows without a number only beside rows with one
        found.failed += reading.failed
    elif reading.wp.state == WpState.DONE and last_step:
        found.missing[reading.wp.id] = "no figure: " + "; ".join(reading.notes)


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
    """The MAD_* variables a models.json entry's script was given (its work folder's mad.env), or
    {}."""
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
    return sorted(
        n for n, texts in seen.items() if len(texts) > 1 and not n.startswith(("jube_", "caramel_"))
    )


def _stdout_files(inp: AnalysisInput, wp: WPRecord) -> list[str]:
    step = inp.benchmark.steps.get(wp.step)
    names = ["stdout"]
    for do in step.dos if step is not None else []:
        if do.stdout and "$" not in do.stdout and do.stdout not in names:
            names.append(do.stdout)
    return names


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="ignore") as handle:  # as madengine reads its log
            return handle.read()
    except OSError:
        return None


def _line_figures(text: str) -> list[LineFigure]:
    """Every line's first match (caramel's own files: a figure per line, never across lines)."""
    out, offset = [], 0
    for line in text.splitlines(keepends=True):
        found = PERFORMANCE_LINE.search(line.rstrip("\r\n"))
        if found:
            out.append(LineFigure(found["number"], found["metric"], offset + found.start()))
        offset += len(line)
    return out


@dataclass(frozen=True)
class _Log:
    """A stdout file of a workpackage: its name (as the step names it), its path, its text."""

    name: str
    path: str
    text: str


def _logs(inp: AnalysisInput, wp: WPRecord) -> list[_Log]:
    """The workpackage's stdout files that can be read, in order."""
    out = []
    for name in _stdout_files(inp, wp):
        path = os.path.join(wp.work_dir, name)
        text = _read_text(path)
        if text is not None:
            out.append(_Log(name, path, text))
    return out


def _from_log(inp: AnalysisInput, model: str, first_only: bool, reading: _Reading) -> list[Figure]:
    """The figures of the workpackage's stdout files: a models.json entry's first match over its
    whole stdout (madengine's one figure per run), every matching line for caramel's own files."""
    unread: list[tuple[str, int, str]] = []  # `performance:` lines without a figure: where, what
    out: list[Figure] = []
    for log in _logs(inp, reading.wp):
        hits = _hits(log.text, first_only)
        out += _log_figures(log, hits, model, reading)
        unread += _unread_lines(log)
        if first_only and hits:
            return out  # madengine's one log: the first match ends the reading
    _report_unread(unread, reading, bool(out))
    return out


def _log_figures(log: _Log, hits: list[LineFigure], model: str, reading: _Reading) -> list[Figure]:
    figures = (_line_figure(log, hit, model, reading) for hit in hits)
    return [figure for figure in figures if figure is not None]


def _report_unread(unread: list[tuple[str, int, str]], reading: _Reading, figures: bool) -> None:
    """Each `performance:` line that does not read is a problem; without figures, the reason."""
    for path, line, text in unread:
        reading.problem(
            f"{path}:{line}: {text!r} does not read as madengine's 'performance: NUMBER METRIC'"
        )
    if not figures:
        reading.notes += _unread_notes(unread) or [NO_LINE]


def _hits(text: str, first_only: bool) -> list[LineFigure]:
    """A models.json entry's first match in the whole text, else every line's first match."""
    if not first_only:
        return _line_figures(text)
    hit = first_performance(text)
    return [hit] if hit else []


def _line_figure(log: _Log, hit: LineFigure, model: str, reading: _Reading) -> Figure | None:
    """The figure of a match; None (a problem) where its number is past a double (1e999)."""
    line = log.text.count("\n", 0, hit.offset) + 1
    value = _number(hit.number)
    if value is None:
        reading.problem(f"{log.path}:{line}: {hit.number!r} is not a finite number")
        reading.notes.append(f"{hit.number!r} ({log.name}:{line}) is not a finite number")
        return None
    return Figure(reading.wp, model, value, hit.metric, f"{log.path}:{line}")


def _unread_lines(log: _Log) -> list[tuple[str, int, str]]:
    """The lines holding `performance:` that do not read as madengine's line: where, what."""
    return [
        (log.path, n, t.strip())
        for n, t in enumerate(log.text.splitlines(), 1)
        if "performance:" in t and not PERFORMANCE_LINE.search(t)
    ]


def _unread_notes(unread: list[tuple[str, int, str]]) -> list[str]:
    return [
        f"{text!r} ({os.path.basename(path)}:{line}) has no number and metric as "
        "madengine reads them"
        for path, line, text in unread
    ]


def _csv_figures(csv_name: str, prefix: str, reading: _Reading) -> list[Figure]:
    path = results_csv_path(reading.wp, csv_name)
    if not path:
        model_dir = reading.wp.params.get(MODEL_DIR_PARAMETER)
        nor = f" nor in {model_dir}/" if model_dir else ""
        reading.notes.append(f"no {csv_name} in the work folder{nor}")
        return []
    return _from_csv(path, prefix, reading)


@dataclass(frozen=True)
class _CsvRow:
    """A results CSV row as written: model (after a models.json entry's name), metric,
    performance, the further columns and its line."""

    model: str
    metric: str
    performance: str
    extra: dict[str, str]
    line: int


def _from_csv(path: str, prefix: str, reading: _Reading) -> list[Figure]:
    """The rows of a results CSV. `prefix`: a models.json entry's name, which madengine puts before
    each row's model (`ENTRY_MODEL`, update_perf_csv.py `handle_multiple_results`), and then only
    the column `model` names the model, as there."""
    with open(path, newline="", errors="replace") as handle:
        reader = csv.DictReader(handle)
        reader.fieldnames = [name.strip() for name in reader.fieldnames or []]
        model_column = _model_column(reader.fieldnames, prefix)
        problem = _header_problem(reader.fieldnames, model_column, path, prefix)
        if problem:
            reading.problem(problem)
            reading.notes.append(problem)
            return []
        rows = (_csv_row(row, model_column, prefix, reader.line_num) for row in reader)
        return _csv_figures_of(rows, path, reading)


def _model_column(fieldnames: list[str], prefix: str) -> str:
    """The column naming the model: a models.json entry's CSV only `model`, as madengine reads it;
    '' where there is none."""
    accepted = (MAD_MODEL_COLUMN,) if prefix else MODEL_COLUMNS
    return next((c for c in accepted if c in fieldnames), "")


def _header_problem(fieldnames: list[str], model_column: str, path: str, prefix: str) -> str:
    """What the header lacks, naming the file; '' where it has every column."""
    missing = ["model"] * (not model_column) + [
        c for c in ("performance", "metric") if c not in fieldnames
    ]
    if not missing:
        return ""
    return (
        f"{path}: no column {', '.join(missing)} (header: {','.join(fieldnames) or 'none'}); "
        "expected the columns model,performance,metric"
        + ("" if prefix else " (or models,performance,metric)")
    )


def _csv_row(row: dict[str, Any], model_column: str, prefix: str, line: int) -> _CsvRow:
    known = {model_column, "performance", "metric"}
    extra = {k: _field(row, k) for k in row if k is not None and k not in known}
    model = _field(row, model_column)
    model = f"{prefix}_{model}" if prefix else model
    return _CsvRow(model, _field(row, "metric"), _field(row, "performance"), extra, line)


def _field(row: dict[str, Any], column: str) -> str:
    return (row.get(column) or "").strip()


def _csv_figures_of(rows: Iterator[_CsvRow], path: str, reading: _Reading) -> list[Figure]:
    """Every row with a number is a figure, the how-manieth of its model and metric
    (`Figure.model_row`); a row without one is a FailedRow (madengine's FAILURE row)."""
    out: list[Figure] = []
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        value = _number(row.performance)
        if value is None:
            _fail(row, path, reading)
            continue
        seen[(row.model, row.metric)] = seen.get((row.model, row.metric), 0) + 1
        where = f"{path}:{row.line}"
        count = seen[(row.model, row.metric)]
        out.append(Figure(reading.wp, row.model, value, row.metric, where, row.extra, count))
    return out


def _fail(row: _CsvRow, path: str, reading: _Reading) -> None:
    """A row whose performance is empty or not a number: a problem and a FAILURE row."""
    text = row.performance
    why = "empty performance" if not text else f"{text!r} is not a number"
    reason = f"{os.path.basename(path)}:{row.line}: {why}"
    reading.problem(f"{path}:{row.line}: {why}")
    reading.notes.append(reason)
    reading.failed.append(FailedRow(reading.wp, row.model, row.metric, reason, row.extra))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
