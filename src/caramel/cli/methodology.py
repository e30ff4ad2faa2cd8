"""`bench compare [-i ID | -c ID] --targets FILE`: the Mila methodology table (history/methodology.py).

Exit 1 when a criterion fails; `--format table|json|markdown`."""

from __future__ import annotations

import argparse
import json
import math

from caramel.errors import RunError


def load_targets(path: str) -> dict:
    try:
        with open(path) as handle:
            targets = json.load(handle)
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: not a JSON file of targets: {exc}",
                       hint='expected {"fast": 12.5, "gpt/Tokens/second": {"value": 1200, "threshold": 10}}') from None
    if not isinstance(targets, dict) or not all(
            isinstance(v, (int, float)) or (isinstance(v, dict) and isinstance(v.get("value"), (int, float)))
            for v in targets.values()):
        raise RunError(f"{path}: targets must map names to numbers or {{\"value\": N, \"threshold\": P}}")
    return targets


def methodology(args: argparse.Namespace, runs: list[str]) -> int:
    from caramel.analyse import from_run
    from caramel.history.methodology import judge
    from caramel.history.metrics import collect
    from caramel.report.results import history_tables, produce

    figures = []
    for run_dir in runs:
        inp = from_run(run_dir)
        figures += [(inp.benchmark.name, m) for m in collect(inp, history_tables(inp, produce(inp).made))]
    result = judge(figures, load_targets(args.targets), args.threshold, args.max_sd)
    if args.format == "json":
        print(json.dumps({"benchmarks": [dict(vars(x), passed=x.passed) for x in result.lines],
                          "missing": result.missing, "passed": result.passed,
                          "criteria": [{"name": n, "value": v, "passed": ok} for n, v, ok in result.criteria]},
                         indent=1, default=lambda v: None))
    else:
        _print(result, markdown=args.format == "markdown")
    return 0 if result.passed else 1


def _print(result, markdown: bool) -> None:
    head = ["bench", "target", "result", "sd", "sd%", "diff", "pass"]
    rows = [[x.name, f"{x.target:.6g}", f"{x.result:.6g}", f"{x.sd:.4g}", f"{x.sd_pct:.2f}%", f"{x.diff_pct:+.2f}%",
             str(x.passed)] for x in result.lines]
    rows += [[name, "", "no figure", "", "", "", "False"] for name in result.missing]
    stats = [[name, "" if value is None or math.isnan(value) else f"{value:+.4f} %", str(ok)]
             for name, value, ok in result.criteria]
    for block, heading in ((rows, head), (stats, ["statistics", "value", "pass"])):
        if markdown:
            print("| " + " | ".join(heading) + " |")
            print("|" + "|".join("---" for _ in heading) + "|")
            for r in block:
                print("| " + " | ".join(r) + " |")
        else:
            table = [heading] + block
            widths = [max(len(r[i]) for r in table) for i in range(len(heading))]
            for r in table:
                print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
        print()
