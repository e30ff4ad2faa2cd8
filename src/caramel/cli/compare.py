"""`bench compare [DIR] [-i ID] --baseline ID|NAME|FILE [--threshold P]`: regressed, improved,
within noise or cannot judge, from the 99 % interval of the ratio current/baseline
(history.compare), with the repetitions per side that would decide where it cannot.

Exit 1 when any metric regressed, so CI can gate on it."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from caramel.cli.common import add_run_args
from caramel.cli.methodology import Format, MethodologyOptions
from caramel.cli.tables import print_table
from caramel.errors import CaramelError, RunError
from caramel.stages.state import bounded
from caramel.vocabulary import VerdictWord

if TYPE_CHECKING:  # the history's modules: imported by the command, not by `bench --help`
    from caramel.consumers.history.compare import Verdict
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.store import History, RunRecord

COMMAND = "compare"  # `bench compare` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "compare", help="compare a run with a baseline run, a named baseline or targets"
    )
    add_run_args(parser)
    parser.add_argument(
        "--targets",
        metavar="FILE",
        default=None,
        help="the methodology table against a targets file (YAML or JSON): references per system "
        "with tolerances, or the flat {name: value} (exit 1 on a fail or a cannot-judge)",
    )
    parser.add_argument(
        "--estimator",
        metavar="all|trimmed|milabench[ ddof=N]",
        default=None,
        help="with --targets: how means and sds are taken, over the steps' `estimator` "
        "(default: the benchmark's, else all samples with ddof=1)",
    )
    parser.add_argument(
        "--max-sd",
        type=float,
        default=None,
        metavar="PERCENT",
        help="with --targets: most the 80%% quantile of sd%% may be (default 5)",
    )
    parser.add_argument(
        "--baseline",
        "-b",
        metavar="ID|NAME|FILE",
        help="a run id (of the same outpath), a name given by `bench baseline set`, "
        "or a JSON file of targets {metric: value}",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        metavar="PERCENT",
        help="the band of no change: a ratio within ±P %% is no change "
        "(default 2); a single sample, without a spread, is judged only "
        "against a given threshold",
    )
    parser.add_argument(
        "--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)"
    )
    parser.add_argument("--format", choices=["table", "json", "markdown"], default="table")
    parser.set_defaults(func=run)


def imported(history: History, run_dir: str) -> str:
    """The run's key in the history, adding the run first when it is not there."""
    from caramel.consumers.history.record import add_run
    from caramel.stages.analyse import from_run
    from caramel.stages.report.results import history_tables

    inp = from_run(run_dir)
    return add_run(history, inp, lambda: history_tables(inp), quiet_if_known=True)


@dataclass(frozen=True)
class CompareOptions:
    dir: str | None = None
    id: str | None = None
    baseline: str | None = None  # a run id, a baseline name or a JSON file of targets
    threshold: float | None = None
    history: str | None = None
    format: Format = "table"
    targets: str | None = (
        None  # the methodology table against this targets file instead of a baseline
    )
    estimator: str | None = None  # with targets
    max_sd: float | None = None  # with targets

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CompareOptions:
        return cls(
            dir=args.dir,
            id=args.id,
            baseline=args.baseline,
            threshold=args.threshold,
            history=args.history,
            format=args.format,
            targets=args.targets,
            estimator=args.estimator,
            max_sd=args.max_sd,
        )


def run(args: argparse.Namespace) -> int:
    return compare(CompareOptions.from_args(args), sys.stdout)


def compare(options: CompareOptions, out: TextIO) -> int:
    """`bench compare`: exit 1 when a figure regressed (or, with targets, a criterion fails)."""
    from caramel.consumers.history.store import History
    from caramel.stages.state.registry import resolve

    if options.targets:
        return _judge_by_targets(options, options.targets, resolve(options.dir, options.id), out)
    if not options.baseline:
        raise RunError("bench compare needs --baseline ID|NAME|FILE or --targets FILE")
    run_dir = resolve(options.dir, options.id)
    with History.open(options.history) as history:
        key = imported(history, run_dir)
        current = history.metrics(key)
        if not current:
            raise RunError(f"{run_dir}: the run has no figure to compare", hint=NO_FIGURE_HINT)
        verdicts = _verdicts(options.baseline, options.threshold, history, key, run_dir, current)
    regressed = sum(v.verdict == VerdictWord.REGRESSED for v in verdicts)
    if options.format == "json":
        out.write(json.dumps([_record(v) for v in verdicts], indent=1) + "\n")
    else:
        _show(options.baseline, run_dir, verdicts, out)
        _counts(verdicts, regressed, out)
    return 1 if regressed else 0


def _judge_by_targets(options: CompareOptions, targets: str, run_dir: str, out: TextIO) -> int:
    """`bench compare --targets FILE`: the run judged by the methodology's criteria."""
    from caramel.cli.methodology import methodology

    judged = MethodologyOptions(
        targets=targets,
        estimator=options.estimator,
        threshold=options.threshold,
        max_sd=options.max_sd,
        history=options.history,
        format=options.format,
    )
    return methodology(judged, [run_dir], out)


def _counts(verdicts: list[Verdict[Metric]], regressed: int, out: TextIO) -> None:
    """Below the table: why the figures that cannot be judged cannot, and what would decide them;
    how many regressed."""
    unknown, single, undecided = _unjudged(verdicts)
    if unknown:
        out.write(
            f"{unknown} metric(s) changed but cannot be judged: their direction is "
            "unknown (declare direction: lower|higher on the pattern)\n"
        )
    if single:
        out.write(
            f"{single} metric(s) of a single sample on a side: no spread, judged only "
            "against an explicit --threshold (or run with --repeat N)\n"
        )
    if undecided:
        out.write(
            f"{undecided} metric(s) cannot be judged at this spread: the ratio's interval "
            "reaches both inside and outside the threshold; repeat as many times per side "
            "as 'needed' says\n"
        )
    if regressed:
        out.write(f"{regressed} metric(s) regressed\n")


def _unjudged(verdicts: list[Verdict[Metric]]) -> tuple[int, int, int]:
    """How many figures cannot be judged: of an unknown direction, of a single sample on a side,
    and at their spread."""
    from caramel.consumers.history.compare import CANNOT_JUDGE, UNKNOWN_DIRECTION

    why = [v.why for v in verdicts if v.verdict == CANNOT_JUDGE]
    unknown = sum(w.startswith(UNKNOWN_DIRECTION) for w in why)
    single = sum(w.startswith("single sample") for w in why)
    return unknown, single, len(why) - unknown - single


NO_FIGURE_HINT = (
    "a column is a figure when its pattern has a unit (unit: s, unit: tokens/s) or a direction "
    "(direction: lower|higher), or it is a `performance: N UNIT` line (docs/history.md)"
)


def _verdicts(
    baseline: str,
    threshold: float | None,
    history: History,
    key: str,
    run_dir: str,
    current: list[Metric],
) -> list[Verdict[Metric]]:
    """The verdicts against the baseline `baseline` names: a targets file, a baseline name or a
    run id of the run's own outpath. Comparing nothing, or another benchmark's run, is an error."""
    if os.path.isfile(baseline):
        return _against_targets(baseline, threshold, current)
    return _against_run(baseline, threshold, history, key, run_dir, current)


def _against_targets(
    path: str, threshold: float | None, current: list[Metric]
) -> list[Verdict[Metric]]:
    """The verdicts against a JSON file of targets (madengine's and MLPerf's figures by name)."""
    from caramel.consumers.history.compare import compare_targets

    targets = _read_targets(path)
    try:
        verdicts = compare_targets(current, targets, threshold, source=f"the targets file {path}")
    except ValueError as exc:
        raise RunError(
            f"{path}: {exc}",
            hint='expected {"Tokens/second": 1200, '
            '"Time/iteration(s)": {"value": 0.9, "threshold": 5}}',
        ) from None
    if not verdicts:
        raise RunError(
            f"{path}: no target names a figure of the run; nothing was compared",
            hint="the run's figures: " + _names(current),
        )
    return verdicts


def _read_targets(path: str) -> Any:
    """A targets file's JSON (bounded in size: a larger file is an error of its own)."""
    try:
        with open(path, "rb") as handle:
            return bounded.loads(handle.read(bounded.MAX_BYTES + 1), path)
    except bounded.OverLimit:
        raise
    except (OSError, ValueError) as exc:
        raise RunError(
            f"{path}: not a JSON file of targets: {exc}",
            hint='expected {"Tokens/second": 1200, "Time/iteration(s)": {"value": 0.9}}',
        ) from None


def _names(metrics: list[Metric]) -> str:
    """The first 12 names of the figures, sorted, for a hint."""
    return ", ".join(sorted({m.name for m in metrics})[:12])


def _against_run(
    baseline: str,
    threshold: float | None,
    history: History,
    key: str,
    run_dir: str,
    current: list[Metric],
) -> list[Verdict[Metric]]:
    """The verdicts against a run of the same benchmark: a baseline name, or a run id of the
    run's own outpath (imported into the history first)."""
    from caramel.consumers.history.compare import compare_runs

    base_key = history.baseline(baseline) or imported(history, _baseline_run(baseline, run_dir))
    mine, theirs = history.run(key), history.run(base_key)
    if mine is not None and theirs is not None:
        _refuse_other_benchmark(baseline, mine, theirs, run_dir)
    sides = (f"the run {run_dir}", _baseline_named(baseline, theirs))
    base = history.metrics(base_key)
    verdicts = compare_runs(current, base, threshold, sides)
    _refuse_nothing_compared(verdicts, baseline, current, base)
    return verdicts


def _refuse_nothing_compared(
    verdicts: list[Verdict[Metric]], baseline: str, current: list[Metric], base: list[Metric]
) -> None:
    """An error when the run and its baseline share no figure."""
    if all(v.verdict == VerdictWord.NO_BASELINE for v in verdicts):
        raise RunError(
            f"the run and baseline '{baseline}' have no figure in common; nothing was compared",
            hint=f"the run's figures: {_names(current)}; the baseline's: {_names(base) or 'none'}",
        )


def _baseline_named(baseline: str, theirs: RunRecord | None) -> str:
    """The baseline as the verdicts name it: as given, with its run folder where known."""
    return f"baseline '{baseline}'" + (f" ({theirs.run_dir})" if theirs is not None else "")


def _refuse_other_benchmark(
    baseline: str, mine: RunRecord, theirs: RunRecord, run_dir: str
) -> None:
    """An error when the baseline is a run of another benchmark: nothing would compare."""
    if mine.benchmark == theirs.benchmark:
        return
    raise RunError(
        f"baseline '{baseline}' is a run of benchmark '{theirs.benchmark}' ({theirs.run_dir}), "
        f"this run is of '{mine.benchmark}' ({run_dir}); nothing was compared",
        hint=(
            "compare runs of one benchmark: bench compare -i ID --baseline ID_OF_THE_SAME_BENCHMARK"
        ),
    )


def _baseline_run(baseline: str, run_dir: str) -> str:
    """The run folder a run id names, looked up in the run's own outpath (never another
    benchmark's)."""
    from caramel.stages.state.registry import resolve

    try:
        return resolve(os.path.dirname(run_dir), baseline)
    except CaramelError as exc:
        raise RunError(
            f"baseline '{baseline}' is no run id, baseline name or file ({exc.message}; "
            f"a run id is looked up in the run's own outpath {os.path.dirname(run_dir)})",
            hint="bench baseline set NAME -i ID names one",
        ) from None


def _show(baseline: str, run_dir: str, verdicts: list[Verdict[Metric]], out: TextIO) -> None:
    """The verdicts as a table, the ratio's interval and band of no change below it."""
    out.write(f"{os.path.basename(run_dir)} against {baseline}:\n")
    level = f"{100 * verdicts[0].level:g} %" if verdicts else ""
    print_table(
        out,
        [
            "metric",
            "config",
            "baseline",
            "current",
            "diff",
            f"ratio [{level} interval]",
            "verdict",
            "needed",
        ],
        [_verdict_row(v) for v in verdicts],
        indent=2,
    )
    if verdicts:
        out.write(
            f"  ratio: current/baseline, its interval by the {verdicts[0].method}; "
            f"band of no change ±{verdicts[0].threshold:g} %; needed: repetitions per side "
            "that would decide\n"
        )


def _verdict_row(v: Verdict[Metric]) -> list[str]:
    unit = f"[{v.metric.unit}]" if v.metric.unit else ""
    unstable = " unstable" if v.metric.unstable else ""
    return [
        v.metric.name + unit,
        v.metric.key,
        _fmt(v.baseline_mean, v.baseline_sd, v.baseline_n),
        _fmt(v.metric.mean, v.metric.sd, v.metric.n) + unstable,
        "" if math.isnan(v.diff_pct) else f"{v.diff_pct:+.1f}%",
        _ratio(v),
        v.verdict,
        "" if v.needed is None else str(v.needed),
    ]


def _record(v: Verdict[Metric]) -> dict[str, object]:
    """One verdict as JSON: the figures with their intervals, the ratio with its interval, the
    verdict."""
    from caramel.stages.analyse.intervals import mean_interval

    current, base = (
        mean_interval(v.metric.mean, v.metric.sd, v.metric.n, v.level),
        mean_interval(v.baseline_mean, v.baseline_sd, v.baseline_n, v.level),
    )
    return {
        "table": v.metric.table,
        "config": v.metric.row,
        "metric": v.metric.name,
        "unit": v.metric.unit,
        "direction": getattr(v.metric.direction, "value", v.metric.direction),
        "baseline": _json(v.baseline_mean),
        "baseline_sd": _json(v.baseline_sd),
        "baseline_n": v.baseline_n,
        "baseline_ci": [_json(base.low), _json(base.high)],
        "current": _json(v.metric.mean),
        "current_sd": _json(v.metric.sd),
        "current_n": v.metric.n,
        "current_ci": [_json(current.low), _json(current.high)],
        "ci_method": current.method,
        "diff_pct": _json(v.diff_pct),
        "ratio": _json(v.ratio),
        "ratio_ci": [_json(v.ratio_low), _json(v.ratio_high)],
        "ratio_method": v.method,
        "level": v.level,
        "threshold_pct": v.threshold,
        "repetitions_needed": v.needed,
        "verdict": v.verdict,
        "why": v.why,
    }


def _ratio(v: Verdict[Metric]) -> str:
    """`1.056 [1.031, 1.082]`; the ratio alone where a side has one sample (no interval)."""
    if math.isnan(v.ratio):
        return "-"
    if math.isnan(v.ratio_low):
        return f"{v.ratio:.4g}"
    return f"{v.ratio:.4g} [{v.ratio_low:.4g}, {v.ratio_high:.4g}]"


def _json(value: float) -> float | None:
    """A number for JSON; NaN (no baseline, no spread with one sample) is null."""
    return None if value is None or math.isnan(value) else value


def _fmt(mean: float, sd: float, n: int) -> str:
    """mean ± sd (n=N); with one sample the sd is unknown: '-' (cannot judge spread), never 0."""
    if not n or math.isnan(mean):
        return "-"
    from caramel.stages.report.readable import number, spread_decimals

    # rounded as a table for people is (report.readable): to the spread, else 4 digits, never
    # in exponent form (`11500 ± 120`, not `1.15e+04 ± 1.2e+02`)
    decimals = None if n < 2 or math.isnan(sd) else spread_decimals(sd)
    spread = "-" if n < 2 or math.isnan(sd) else number(sd, decimals)
    return f"{number(mean, decimals)} ± {spread} (n={n})"
