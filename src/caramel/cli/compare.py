"""`bench compare [DIR] [-i ID] --baseline ID|NAME|FILE [--threshold P]`: regressed, improved or noise.

Exit 1 when any metric regressed, so CI can gate on it."""

from __future__ import annotations

import argparse
import json
import math
import os

from caramel.cli.common import add_run_args, resolve_run
from caramel.errors import CaramelError, RunError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="compare a run with a baseline run, a named baseline or targets")
    add_run_args(parser)
    parser.add_argument("--targets", metavar="FILE", default=None,
                        help="the methodology table against a targets file (YAML or JSON): references per system "
                             "with tolerances, or the flat {name: value} (exit 1 on a fail or a cannot-judge)")
    parser.add_argument("--estimator", metavar="all|trimmed|milabench[ ddof=N]", default=None,
                        help="with --targets: how means and sds are taken, over the steps' `estimator` "
                             "(default: the benchmark's, else all samples with ddof=1)")
    parser.add_argument("--max-sd", type=float, default=None, metavar="PERCENT",
                        help="with --targets: most the 80%% quantile of sd%% may be (default 5)")
    parser.add_argument("--baseline", "-b", metavar="ID|NAME|FILE",
                        help="a run id (of the same outpath), a name given by `bench baseline set`, "
                             "or a JSON file of targets {metric: value}")
    parser.add_argument("--threshold", type=float, metavar="PERCENT",
                        help="smallest change that counts (default 2 %% with repeats on both sides, else 5 %%)")
    parser.add_argument("--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)")
    parser.add_argument("--format", choices=["table", "json", "markdown"], default="table")
    parser.set_defaults(func=run)


def imported(history, run_dir: str) -> str:
    """The run's key in the history, adding the run first when it is not there."""
    from caramel.analyse import from_run
    from caramel.history.record import add_run
    from caramel.report.results import history_tables

    inp = from_run(run_dir)
    return add_run(history, inp, lambda: history_tables(inp), quiet_if_known=True)


def run(args: argparse.Namespace) -> int:
    from caramel.history.compare import compare_runs, compare_targets
    from caramel.history.store import History
    from caramel.state.registry import resolve

    if args.targets:
        from caramel.cli.methodology import methodology

        return methodology(args, [resolve_run(args)])
    if not args.baseline:
        raise RunError("bench compare needs --baseline ID|NAME|FILE or --targets FILE")
    run_dir = resolve_run(args)
    with History.open(args.history) as history:
        current = history.metrics(imported(history, run_dir))
        if os.path.isfile(args.baseline):
            try:
                with open(args.baseline) as handle:
                    targets = json.load(handle)
            except (OSError, ValueError) as exc:
                raise RunError(f"{args.baseline}: not a JSON file of targets: {exc}",
                               hint='expected {"Tokens/second": 1200, "Time/iteration(s)": {"value": 0.9}}') from None
            verdicts = compare_targets(current, targets, args.threshold)
            against = args.baseline
        else:
            key = history.baseline(args.baseline)
            if key is None:
                try:
                    base_dir = resolve(args.dir, args.baseline)
                except CaramelError as exc:
                    raise RunError(f"baseline '{args.baseline}' is no run id, baseline name or file "
                                   f"({exc.message})", hint="bench baseline set NAME -i ID names one") from None
                key = imported(history, base_dir)
            verdicts = compare_runs(current, history.metrics(key), args.threshold)
            against = args.baseline
    if args.format == "json":
        print(json.dumps([{"table": v.metric.table, "config": v.metric.row, "metric": v.metric.name,
                           "unit": v.metric.unit, "direction": v.metric.direction,
                           "baseline": v.baseline_mean, "baseline_sd": v.baseline_sd, "baseline_n": v.baseline_n,
                           "current": v.metric.mean, "current_sd": v.metric.sd, "current_n": v.metric.n,
                           "diff_pct": None if math.isnan(v.diff_pct) else v.diff_pct, "verdict": v.verdict,
                           "why": v.why} for v in verdicts], indent=1))
    else:
        print(f"{os.path.basename(run_dir)} against {against}:")
        rows = [["metric", "config", "baseline", "current", "diff", "verdict"]]
        for v in verdicts:
            rows.append([v.metric.name + (f"[{v.metric.unit}]" if v.metric.unit else ""), v.metric.key,
                         _fmt(v.baseline_mean, v.baseline_sd, v.baseline_n),
                         _fmt(v.metric.mean, v.metric.sd, v.metric.n) + (" unstable" if v.metric.unstable else ""),
                         "" if math.isnan(v.diff_pct) else f"{v.diff_pct:+.1f}%", v.verdict])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    regressed = [v for v in verdicts if v.verdict == "regressed"]
    if regressed and args.format != "json":
        print(f"{len(regressed)} metric(s) regressed")
    return 1 if regressed else 0


def _fmt(mean: float, sd: float, n: int) -> str:
    if not n or math.isnan(mean):
        return "-"
    return f"{mean:.4g}" + (f" ± {sd:.2g} (n={n})" if n > 1 else "")
