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
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import add_run_args
from caramel.cli.methodology import Format, MethodologyOptions
from caramel.cli.tables import print_table
from caramel.errors import CaramelError, RunError
from caramel.stages.state import bounded
from caramel.vocabulary import VerdictWord

if TYPE_CHECKING:  # the history's modules: imported by the command, not by `bench --help`
    from caramel.consumers.history.compare import Verdict
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.store import History

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
        from caramel.cli.methodology import methodology

        judged = MethodologyOptions(
            targets=options.targets,
            estimator=options.estimator,
            threshold=options.threshold,
            max_sd=options.max_sd,
            history=options.history,
            format=options.format,
        )
        return methodology(judged, [resolve(options.dir, options.id)], out)
    if not options.baseline:
        raise RunError("bench compare needs --baseline ID|NAME|FILE or --targets FILE")
    run_dir = resolve(options.dir, options.id)
    with History.open(options.history) as history:
        key = imported(history, run_dir)
        current = history.metrics(key)
        if not current:
            raise RunError(f"{run_dir}: the run has no figure to compare", hint=NO_FIGURE_HINT)
        verdicts = _verdicts(options.baseline, options.threshold, history, key, run_dir, current)
    _show(options, run_dir, verdicts, out)
    regressed = [v for v in verdicts if v.verdict == VerdictWord.REGRESSED]
    if options.format != "json":
        _counts(verdicts, out)
        if regressed:
            out.write(f"{len(regressed)} metric(s) regressed\n")
    return 1 if regressed else 0


def _counts(verdicts: list[Verdict[Metric]], out: TextIO) -> None:
    """Below the table: why the figures that cannot be judged cannot, and what would decide them."""
    from caramel.consumers.history.compare import CANNOT_JUDGE, UNKNOWN_DIRECTION

    unjudged = [v for v in verdicts if v.verdict == CANNOT_JUDGE]
    unknown = [v for v in unjudged if v.why.startswith(UNKNOWN_DIRECTION)]
    single = [v for v in unjudged if v.why.startswith("single sample")]
    undecided = len(unjudged) - len(unknown) - len(single)
    if unknown:
        out.write(
            f"{len(unknown)} metric(s) changed but cannot be judged: their direction is "
            "unknown (declare direction: lower|higher on the pattern)\n"
        )
    if single:
        out.write(
            f"{len(single)} metric(s) of a single sample on a side: no spread, judged only "
            "against an explicit --threshold (or run with --repeat N)\n"
        )
    if undecided:
        out.write(
            f"{undecided} metric(s) cannot be judged at this spread: the ratio's interval "
            "reaches both inside and outside the threshold; repeat as many times per side "
            "as 'needed' says\n"
        )


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
    from caramel.consumers.history.compare import compare_runs, compare_targets

    if os.path.isfile(baseline):
        try:
            with open(baseline, "rb") as handle:
                targets = bounded.loads(handle.read(bounded.MAX_BYTES + 1), baseline)
        except bounded.OverLimit:
            raise
        except (OSError, ValueError) as exc:
            raise RunError(
                f"{baseline}: not a JSON file of targets: {exc}",
                hint='expected {"Tokens/second": 1200, "Time/iteration(s)": {"value": 0.9}}',
            ) from None
        try:
            verdicts = compare_targets(
                current, targets, threshold, source=f"the targets file {baseline}"
            )
        except ValueError as exc:
            raise RunError(
                f"{baseline}: {exc}",
                hint='expected {"Tokens/second": 1200, '
                '"Time/iteration(s)": {"value": 0.9, "threshold": 5}}',
            ) from None
        if not verdicts:
            raise RunError(
                f"{baseline}: no target names a figure of the run; nothing was compared",
                hint="the run's figures: " + ", ".join(sorted({m.name for m in current})[:12]),
            )
        return verdicts
    base_key = history.baseline(baseline) or imported(history, _baseline_run(baseline, run_dir))
    mine, theirs = history.run(key), history.run(base_key)
    if mine is not None and theirs is not None and mine.benchmark != theirs.benchmark:
        raise RunError(
            f"baseline '{baseline}' is a run of benchmark '{theirs.benchmark}' ({theirs.run_dir}), "
            f"this run is of '{mine.benchmark}' ({run_dir}); nothing was compared",
            hint=(
                "compare runs of one benchmark: "
                "bench compare -i ID --baseline ID_OF_THE_SAME_BENCHMARK"
            ),
        )
    theirs_named = f"baseline '{baseline}'" + (f" ({theirs.run_dir})" if theirs is not None else "")
    sides = (f"the run {run_dir}", theirs_named)
    verdicts = compare_runs(current, history.metrics(base_key), threshold, sides)
    if all(v.verdict == VerdictWord.NO_BASELINE for v in verdicts):
        raise RunError(
            f"the run and baseline '{baseline}' have no figure in common; nothing was compared",
            hint="the run's figures: "
            + ", ".join(sorted({m.name for m in current})[:12])
            + "; the baseline's: "
            + (", ".join(sorted({m.name for m in history.metrics(base_key)})[:12]) or "none"),
        )
    return verdicts


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


def _show(
    options: CompareOptions, run_dir: str, verdicts: list[Verdict[Metric]], out: TextIO
) -> None:
    if options.format == "json":
        out.write(json.dumps([_record(v) for v in verdicts], indent=1) + "\n")
        return
    out.write(f"{os.path.basename(run_dir)} against {options.baseline}:\n")
    level = f"{100 * verdicts[0].level:g} %" if verdicts else ""
    rows = [
        [
            v.metric.name + (f"[{v.metric.unit}]" if v.metric.unit else ""),
            v.metric.key,
            _fmt(v.baseline_mean, v.baseline_sd, v.baseline_n),
            _fmt(v.metric.mean, v.metric.sd, v.metric.n)
            + (" unstable" if v.metric.unstable else ""),
            "" if math.isnan(v.diff_pct) else f"{v.diff_pct:+.1f}%",
            _ratio(v),
            v.verdict,
            "" if v.needed is None else str(v.needed),
        ]
        for v in verdicts
    ]
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
        rows,
        indent=2,
    )
    if verdicts:
        out.write(
            f"  ratio: current/baseline, its interval by the {verdicts[0].method}; "
            f"band of no change ±{verdicts[0].threshold:g} %; needed: repetitions per side "
            "that would decide\n"
        )


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
