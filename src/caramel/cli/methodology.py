"""`bench compare [-i ID | -c ID] --targets FILE [--estimator E]`: the Mila methodology table
(history/methodology.py) against a targets file (history/targets.py), for the system the runs ran on.

Exit 1 when a criterion fails or cannot be judged; `--format table|json|markdown`."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from caramel.cli.tables import RIGHT, Column, print_table
from caramel.errors import CaramelError


def load_targets(path: str):
    from caramel.history.targets import read_targets

    return read_targets(path)


def methodology(args: argparse.Namespace, runs: list[str]) -> int:
    from caramel.analyse import from_run
    from caramel.analyse.estimators import estimator_of
    from caramel.history.methodology import judge
    from caramel.history.metrics import collect
    from caramel.history.provenance import run_record
    from caramel.report.results import history_tables, produce
    from caramel.spec.estimator import parse_estimator

    chosen = getattr(args, "estimator", None)
    override = parse_estimator(chosen) if chosen else None
    targets = load_targets(args.targets)
    figures, estimators, folders = [], {}, [os.getcwd()]
    systems: list[str] = []
    for run_dir in runs:
        inp = from_run(run_dir)
        name = inp.benchmark.name
        figures += [(name, m) for m in collect(inp, history_tables(inp, produce(inp).made))]
        declared = {s.estimator for s in inp.benchmark.steps.values() if s.estimator}
        estimators[name] = override or estimator_of(declared.pop() if len(declared) == 1 else "")
        record = run_record(run_dir)
        systems = list(dict.fromkeys([*systems, record.system, *record.tags]))
        folders.append(os.path.dirname(os.path.abspath(record.file)) if record.file else "")
    known = _catalogue([f for f in dict.fromkeys(folders) if f]) | _recorded(getattr(args, "history", None))
    result = judge(figures, targets, args.threshold, args.max_sd, [n for n in systems if n], estimators, known,
                   list(estimators))
    if args.format == "json":
        print(_json(result))
    else:
        _print(result, markdown=args.format == "markdown")
    return 0 if result.passed else 1


def _json(result) -> str:
    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

    lines = [{k: clean(v) for k, v in dict(vars(x), passed=x.passed, verdict=x.verdict.value).items()}
             for x in result.lines]
    return json.dumps({"system": result.system, "estimators": result.captions, "benchmarks": lines,
                       "missing": result.missing, "passed": result.passed,
                       "criteria": [{"name": n, "value": clean(v), "passed": ok} for n, v, ok in result.criteria]},
                      indent=1)


def _catalogue(folders: list[str]) -> set[str]:
    """The benchmark names caramel knows besides the runs' (a targets file may cover a whole suite): the
    catalogue's, and the benchmark files beside the runs' files and in the current folder."""
    from caramel.catalog import find_benchmarks

    try:
        return {entry.name for entry in find_benchmarks(folders)}
    except (OSError, CaramelError):
        return set()


def _recorded(path: str | None) -> set[str]:
    """The benchmarks the history holds runs of (a suite's other members were judged before)."""
    from caramel.history.store import History

    try:
        with History.open(path) as history:
            return {run.benchmark for run in history.runs()}
    except (OSError, CaramelError):
        return set()


def _number(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def _print(result, markdown: bool) -> None:
    head = ["bench", "target", "bounds", "result", "n", "sd", "sd%", "sem%", "diff", "pass", "why"]
    rows = [[x.name, _number(x.target, ".6g"), _bounds(x), _number(x.result, ".6g"), str(x.n), _number(x.sd, ".4g"),
             _pct(x.sd_pct), _pct(x.sem_pct), "-" if math.isnan(x.diff_pct) else f"{x.diff_pct:+.2f}%",
             x.verdict.value, x.why] for x in result.lines]
    stats = [[name, "" if value is None or math.isnan(value) else f"{value:+.4f} %",
              "cannot judge" if ok is None else str(ok)] for name, value, ok in result.criteria]
    if result.system:
        print(f"system: {result.system}")
    elif result.system is None:
        print("system: none of the targets file's systems")
    for caption in result.captions:
        print(caption)
    for block, heading in ((rows, head), (stats, ["statistics", "value", "pass"])):
        if markdown:
            print("| " + " | ".join(heading) + " |")
            print("|" + "|".join("---" for _ in heading) + "|")
            for r in block:
                print("| " + " | ".join(r) + " |")
        else:
            print_table(sys.stdout, [heading[0], *(Column(h, RIGHT) for h in heading[1:])], block)
        print()


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}%"


def _bounds(line) -> str:
    if math.isnan(line.target):
        return "-"
    low = "-inf" if math.isinf(line.low) else f"{line.low:.6g}"
    high = "+inf" if math.isinf(line.high) else f"{line.high:.6g}"
    return f"[{low}, {high}]"
