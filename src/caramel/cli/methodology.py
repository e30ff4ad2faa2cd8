"""`bench compare [-i ID | -c ID] --targets FILE [--estimator E]`: the Mila methodology table
(history/methodology.py) against a targets file (history/targets.py), for the system the runs ran
on.

Exit 1 when a criterion fails or cannot be judged; `--format table|json|markdown`."""

from __future__ import annotations

import argparse
import json
import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO

from caramel.cli.tables import RIGHT, Column, print_table
from caramel.errors import CaramelError

if TYPE_CHECKING:  # the history's modules: imported by the command, not by `bench --help`
    from caramel.consumers.history.methodology import Line, Methodology
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.targets import Targets
    from caramel.stages.analyse.inputs import AnalysisInput
    from caramel.stages.spec.estimator import Estimator


def load_targets(path: str) -> Targets:
    from caramel.consumers.history.targets import read_targets

    return read_targets(path)


Format = Literal["table", "json", "markdown"]


@dataclass(frozen=True)
class MethodologyOptions:
    """What `bench compare --targets` reads: the targets file and how the runs are judged against
    it."""

    targets: str
    estimator: str | None = None  # all|trimmed|milabench[ ddof=N]; None: the benchmark's own
    threshold: float | None = None
    max_sd: float | None = None
    history: str | None = None
    format: Format = "table"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> MethodologyOptions:
        return cls(
            targets=args.targets,
            estimator=args.estimator,
            threshold=args.threshold,
            max_sd=args.max_sd,
            history=args.history,
            format=args.format,
        )


def methodology(options: MethodologyOptions, runs: list[str], out: TextIO) -> int:
    """The runs' figures judged against the targets file; exit 1 when a criterion fails or
    cannot be judged."""
    from caramel.consumers.history.methodology import judge
    from caramel.stages.spec.estimator import parse_estimator

    override = parse_estimator(options.estimator) if options.estimator else None
    targets = load_targets(options.targets)
    runs_read = _RunsRead()
    for run_dir in runs:
        runs_read.add(run_dir, override)
    result = judge(
        runs_read.figures,
        targets,
        options.threshold,
        options.max_sd,
        [n for n in runs_read.systems if n],
        runs_read.estimators,
        runs_read.known_benchmarks(options.history),
        list(runs_read.estimators),
        runs_read.columns,
    )
    if options.format == "json":
        out.write(_json(result) + "\n")
    else:
        _print(result, options.format == "markdown", out)
    return 0 if result.passed else 1


@dataclass
class _RunsRead:
    """What the judgement draws from the runs: their figures (by benchmark), each benchmark's
    estimator, the systems and tags they ran with, the columns that are not figures (and why) and
    the folders of their benchmark files (besides the current one)."""

    figures: list[tuple[str, Metric]] = field(default_factory=list)
    estimators: dict[str, Estimator] = field(default_factory=dict)
    systems: list[str] = field(default_factory=list)
    columns: dict[str, str] = field(default_factory=dict)
    folders: list[str] = field(default_factory=lambda: [os.getcwd()])

    def add(self, run_dir: str, override: Estimator | None) -> None:
        from caramel.consumers.history.metrics import collect, non_figures
        from caramel.consumers.history.provenance import run_record
        from caramel.stages.analyse import from_run
        from caramel.stages.report.results import history_tables, produce

        inp = from_run(run_dir)
        name = inp.benchmark.name
        tables = history_tables(inp, produce(inp).made)
        self.figures += [(name, m) for m in with_copies(inp, collect(inp, tables))]
        self.columns = {**non_figures(inp, tables), **self.columns}
        self.estimators[name] = override or declared_estimator(inp)
        record = run_record(run_dir)
        self.systems = list(dict.fromkeys([*self.systems, record.system, *record.tags]))
        self.folders.append(os.path.dirname(os.path.abspath(record.file)) if record.file else "")

    def known_benchmarks(self, history: str | None) -> set[str]:
        """The benchmarks a targets file may name besides the runs': the catalogue's, the files
        beside the runs' files and in the current folder, and the history's."""
        folders = [f for f in dict.fromkeys(self.folders) if f]
        return _catalogue(folders) | _recorded(history)


def declared_estimator(inp: AnalysisInput) -> Estimator:
    """The estimator the run's steps declare when they agree on one; the default otherwise."""
    from caramel.stages.analyse.estimators import estimator_of

    declared = {s.estimator for s in inp.benchmark.steps.values() if s.estimator}
    return estimator_of(declared.pop() if len(declared) == 1 else "")


def with_copies(inp: AnalysisInput, metrics: list[Metric]) -> list[Metric]:
    """`metrics` with each copies aggregate's lines per copy (Metric.copies), from the run's
    `performance:` lines (report/performance.py copies_lines): the history, below the report stage,
    never reads them itself."""
    from caramel.consumers.history.metrics import COPY_COLUMN, PERFORMANCE_TABLE
    from caramel.stages.spec.units import readable_unit
    from caramel.vocabulary import COPY_AGGREGATES

    if not any(m.row.get(COPY_COLUMN) in COPY_AGGREGATES for m in metrics):
        return metrics
    from caramel.stages.report.performance import copies_lines

    lines = {
        (model, readable_unit(unit)): copies for (model, unit), copies in copies_lines(inp).items()
    }
    for metric in metrics:  # a performance table's row names its model; its unit is the figure's
        if metric.table == PERFORMANCE_TABLE and metric.row.get(COPY_COLUMN) in COPY_AGGREGATES:
            metric.copies = lines.get((metric.row.get("model", ""), metric.unit), [])
    return metrics


def _json(result: Methodology) -> str:
    def clean(value: object) -> object:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

    lines = [
        {k: clean(v) for k, v in dict(vars(x), passed=x.passed, verdict=x.verdict.value).items()}
        for x in result.lines
    ]
    return json.dumps(
        {
            "system": result.system,
            "estimators": result.captions,
            "intervals": result.intervals,
            "benchmarks": lines,
            "missing": result.missing,
            "passed": result.passed,
            "criteria": [
                {"name": n, "value": clean(v), "passed": ok} for n, v, ok in result.criteria
            ],
        },
        indent=1,
    )


def _catalogue(folders: list[str]) -> set[str]:
    """The benchmark names caramel knows besides the runs' (a targets file may cover a whole suite):
    the catalogue's, and the benchmark files beside the runs' files and in the current folder."""
    from caramel.consumers.catalog import find_benchmarks

    try:
        return {entry.name for entry in find_benchmarks(folders)}
    except (OSError, CaramelError):
        return set()


def _recorded(path: str | None) -> set[str]:
    """The benchmarks the history holds runs of (a suite's other members were judged before)."""
    from caramel.consumers.history.store import History

    try:
        with History.open(path) as history:
            return {run.benchmark for run in history.runs()}
    except (OSError, CaramelError):
        return set()


def _number(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def _print(result: Methodology, markdown: bool, out: TextIO) -> None:
    """The system and estimators, then the benchmarks' table and the statistics' table (as
    Markdown, or aligned)."""
    from caramel.stages.analyse.intervals import LEVEL  # the analyse stage: not at `bench --help`

    head = [
        "bench",
        "target",
        "bounds",
        "result",
        f"{100 * LEVEL:g} % CI",
        "n",
        "sd",
        "sd%",
        "sem%",
        "diff",
        "pass",
        "why",
    ]
    rows = [_line_row(x) for x in result.lines]
    stats = [_criterion_row(*criterion) for criterion in result.criteria]
    _print_captions(result, out)
    print_block = _print_markdown if markdown else _print_aligned
    for block, heading in ((rows, head), (stats, ["statistics", "value", "pass"])):
        print_block(heading, block, out)
        out.write("\n")


def _line_row(x: Line) -> list[str]:
    return [
        x.name,
        _number(x.target, ".6g"),
        _bounds(x),
        _number(x.result, ".6g"),
        _interval(x),
        str(x.n),
        _number(x.sd, ".4g"),
        _pct(x.sd_pct),
        _pct(x.sem_pct),
        "-" if math.isnan(x.diff_pct) else f"{x.diff_pct:+.2f}%",
        x.verdict.value,
        x.why,
    ]


def _criterion_row(name: str, value: float | None, ok: bool | None) -> list[str]:
    return [
        name,
        "" if value is None or math.isnan(value) else f"{value:+.4f} %",
        "cannot judge" if ok is None else str(ok),
    ]


def _print_captions(result: Methodology, out: TextIO) -> None:
    """Above the tables: the system judged (or that none of the file's was), the estimators and
    the intervals."""
    if result.system:
        out.write(f"system: {result.system}\n")
    elif result.system is None:
        out.write("system: none of the targets file's systems\n")
    for caption in result.captions:
        out.write(f"{caption}\n")
    if result.intervals:
        out.write(f"CI: {'; '.join(result.intervals)}\n")


def _print_markdown(heading: list[str], block: list[list[str]], out: TextIO) -> None:
    out.write("| " + " | ".join(heading) + " |\n")
    out.write("|" + "|".join("---" for _ in heading) + "|\n")
    for r in block:
        out.write("| " + " | ".join(r) + " |\n")


def _print_aligned(heading: list[str], block: list[list[str]], out: TextIO) -> None:
    print_table(out, [heading[0], *(Column(h, RIGHT) for h in heading[1:])], block)


def _interval(line: Line) -> str:
    """The result's interval, `[low, high]` (`-`: one sample, no spread)."""
    if math.isnan(line.ci_low):
        return "-"
    return f"[{line.ci_low:.6g}, {line.ci_high:.6g}]"


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}%"


def _bounds(line: Line) -> str:
    if math.isnan(line.target) or math.isnan(line.result):  # no reference, or no figure to bound
        return "-"
    low = "-inf" if math.isinf(line.low) else f"{line.low:.6g}"
    high = "+inf" if math.isinf(line.high) else f"{line.high:.6g}"
    return f"[{low}, {high}]"
