"""Campaigns on the command line: `bench run --suite`, and `-c ID|last` on the run commands.

`bench status/continue/cancel/... -c ID` runs the command on each run of the campaign in turn;
`bench result -c ID` prints one combined table per metric kind, then each benchmark's own tables,
and writes `perf.csv` in MAD's shape (model, performance, metric, status) plus the system, the
tags and the run's provenance, so a campaign's figures can go where MAD's go.
"""

from __future__ import annotations

import argparse
import copy
import csv
import io
import math
import os
import sys

from caramel.errors import CaramelError, RunError

PERF_COLUMNS = ["model", "performance", "metric", "status", "system", "tags", "benchmark", "run_id", "run_dir",
                "file", "caramel_version", "git_commit", "host", "nodes", "job_ids", "container", "started",
                "ended", "sd", "n", "reason"]


def for_campaign(args: argparse.Namespace) -> int:
    """The command of `args` on every run of the campaign `args.campaign`."""
    from caramel.state.campaigns import resolve_campaign

    if getattr(args, "id", None):
        raise RunError("-i and -c name different things: give one of them",
                       hint="-i ID: one run; -c ID: every run of a campaign")
    campaign, runs = resolve_campaign(args.campaign)
    if not runs:
        raise RunError(f"campaign {campaign} has no run left on disk")
    if args.command == "result":
        return campaign_result(args, campaign, runs)
    if args.command == "compare" and getattr(args, "targets", None):
        from caramel.cli.methodology import methodology

        return methodology(args, runs)
    code = 0
    for run_dir in runs:
        print(f"== {run_dir}", flush=True)
        one = copy.copy(args)
        one.dir, one.id, one.campaign = run_dir, None, None
        try:
            code = max(code, int(args.func(one) or 0))
        except CaramelError as exc:
            print(f"error: {exc}", file=sys.stderr)
            code = max(code, 2)
    return code


def campaign_result(args: argparse.Namespace, campaign: str, runs: list[str]) -> int:
    """Combined tables per metric kind, each benchmark's tables, and perf.csv."""
    from caramel.cli import result as result_cmd

    rows, own = [], io.StringIO()
    for run_dir in runs:
        rows += _perf_rows(run_dir, args)
    kinds: dict[str, list[dict]] = {}
    for row in rows:
        kinds.setdefault(row["metric"] or "(no figure)", []).append(row)
    print(f"campaign {campaign}: {len(runs)} run(s)")
    for kind, members in kinds.items():
        print(f"\n{kind}:")
        _print_rows([[r["model"], r["performance"], r["sd"], r["n"], r["status"]] for r in members],
                    ["model", "performance", "sd", "n", "status"])
    stdout = sys.stdout
    for run_dir in runs:
        one = copy.copy(args)
        one.dir, one.id, one.campaign = run_dir, None, None
        sys.stdout = own
        try:
            print(f"\n== {run_dir}")
            result_cmd.run(one)
        except CaramelError as exc:
            print(f"error: {exc}", file=sys.stderr)
        finally:
            sys.stdout = stdout
    sys.stdout.write(own.getvalue())
    path = args.perf_csv or "perf.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, PERF_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"\nwrote {path} ({len(rows)} rows)", file=sys.stderr)
    return 0


def _perf_rows(run_dir: str, args: argparse.Namespace) -> list[dict]:
    """One perf.csv row per figure of the run (mean over repeats), and one per failed workpackage."""
    from caramel.analyse import from_run
    from caramel.history.metrics import collect
    from caramel.history.provenance import run_record
    from caramel.report.results import history_tables, produce

    inp = from_run(run_dir)
    record = run_record(run_dir)
    tags = [*getattr(inp.benchmark.meta, "tags", ()), *record.tags]
    prov = {"system": record.system, "tags": " ".join(dict.fromkeys(tags)), "benchmark": record.benchmark,
            "run_id": os.path.basename(run_dir), "run_dir": record.run_dir, "file": record.file,
            "caramel_version": record.caramel_version, "git_commit": record.git_commit, "host": record.host,
            "nodes": record.nodes, "job_ids": " ".join(record.job_ids), "container": record.container,
            "started": record.started or "", "ended": record.ended or ""}
    out = []
    for metric in collect(inp, history_tables(inp, produce(inp).made)):
        config = {k: v for k, v in metric.row.items() if k not in ("model", "metric")}
        model = metric.row.get("model") or inp.benchmark.name
        detail = ",".join(f"{k}={v}" for k, v in config.items())
        unit = metric.row.get("metric") or metric.unit
        name = metric.name if metric.name != "performance" else ""
        out.append(dict(prov, model=model + (f"[{detail}]" if detail else ""),
                        performance=_num(metric.mean), metric=" ".join(x for x in (name, unit) if x),
                        status="SUCCESS", sd=_num(metric.sd), n=metric.n, reason=""))
    for wp in inp.workpackages:
        if wp.state in ("failed", "cancelled", "open", "running", "waiting"):
            out.append(dict(prov, model=f"{inp.benchmark.name}[wp {wp.id} {wp.step}]", performance="", metric="",
                            status="FAILURE" if wp.state in ("failed", "cancelled") else wp.state.upper(),
                            sd="", n=0, reason=wp.reason))
    return out


def _num(value: float) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.6g}"


def _print_rows(rows: list[list], head: list[str]) -> None:
    table = [head] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
