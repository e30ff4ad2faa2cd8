"""Campaigns on the command line: `bench run --suite`, and `-c ID|last` on the run commands.

`bench status/continue/cancel/... -c ID` runs the command on each run of the campaign in turn;
`bench result -c ID` prints one combined table per metric kind, then each benchmark's own tables,
and writes `perf.csv`: madengine's 29 columns in its order (model, n_gpus, ..., performance,
metric, relative_change, status, ..., test_duration, ...), each filled where caramel knows the
value, then caramel's own (system, provenance, sd, n, reason), then the further columns of MAD
results CSVs. A finished workpackage without a figure, a failed one and a member whose file could
not be read are FAILURE rows with their reason. docs/mad.md lists where each value comes from.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import sys
from typing import TYPE_CHECKING, TextIO

from caramel.cli.tables import print_table
from caramel.errors import CaramelError, RunError
from caramel.vocabulary import WpState

if TYPE_CHECKING:
    from caramel.cli.result import ResultOptions
    from caramel.consumers.history.store import RunRecord
    from caramel.consumers.history.suite_score import MemberScore
    from caramel.stages.analyse.inputs import AnalysisInput, WPRecord

PerfRow = dict[str, object]  # a perf.csv row: column -> its cell (text or number)

# madengine's perf.csv columns, in its order (deployment/base.py); a value caramel does not know is
# empty
MADENGINE_COLUMNS = [
    "model",
    "n_gpus",
    "nnodes",
    "gpus_per_node",
    "training_precision",
    "pipeline",
    "args",
    "tags",
    "docker_file",
    "base_docker",
    "docker_sha",
    "docker_image",
    "git_commit",
    "machine_name",
    "deployment_type",
    "launcher",
    "gpu_architecture",
    "performance",
    "metric",
    "relative_change",
    "status",
    "build_duration",
    "test_duration",
    "dataname",
    "data_provider_type",
    "data_size",
    "data_download_duration",
    "build_number",
    "additional_docker_run_options",
]
CARAMEL_COLUMNS = [
    "system",
    "benchmark",
    "run_id",
    "run_dir",
    "file",
    "caramel_version",
    "host",
    "nodes",
    "job_ids",
    "container",
    "started",
    "ended",
    "sd",
    "n",
    "reason",
]
PERF_COLUMNS = MADENGINE_COLUMNS + CARAMEL_COLUMNS


def for_campaign(args: argparse.Namespace) -> int:
    """The command of `args` on every run of the campaign `args.campaign`: `bench result -c` makes
    the campaign's tables, `bench compare -c --targets` judges it as a whole, any other command runs
    on each member in turn (as if `DIR` named it)."""
    from caramel.stages.state.campaigns import resolve_campaign

    if args.id:  # add_run_args gives every command with -c an -i too
        raise RunError(
            "-i and -c name different things: give one of them",
            hint="-i ID: one run; -c ID: every run of a campaign",
        )
    campaign, runs = resolve_campaign(args.campaign)
    if not runs:
        raise RunError(f"campaign {campaign} has no run left on disk")
    if args.command == "result":
        from caramel.cli.result import ResultOptions

        return campaign_result(
            ResultOptions.from_args(args), args.perf_csv, campaign, runs, sys.stdout
        )
    if args.command == "compare" and args.targets:
        from caramel.cli.methodology import MethodologyOptions, methodology

        return methodology(MethodologyOptions.from_args(args), runs, sys.stdout)
    code = 0
    for run_dir in runs:
        print(
            f"== {run_dir}", file=sys.stdout, flush=True
        )  # the wrapper of namespaces main.py hands over
        one = argparse.Namespace(**{**vars(args), "dir": run_dir, "id": None, "campaign": None})
        try:
            code = max(code, int(args.func(one) or 0))
        except CaramelError as exc:
            print(f"error: {exc}", file=sys.stderr)
            code = max(code, 2)
    return code


def campaign_result(
    options: ResultOptions, perf_csv: str | None, campaign: str, runs: list[str], out: TextIO
) -> int:
    """Combined tables per metric kind, each benchmark's tables (`result` on each run), and
    perf.csv."""
    from caramel.cli.result import result
    from caramel.stages.state.campaigns import failures

    rows: list[PerfRow] = []
    for run_dir in runs:
        rows += _perf_rows(run_dir, options.history)
    for benchmark, file, error in failures(campaign):
        rows.append(
            dict(
                dict.fromkeys(PERF_COLUMNS, ""),
                model=benchmark,
                benchmark=benchmark,
                file=file,
                status="FAILURE",
                n=0,
                reason="cannot read: " + " ".join(error.split()),
            )
        )
    kinds: dict[str, list[PerfRow]] = {}
    for row in rows:
        kinds.setdefault(str(row["metric"] or "(no figure)"), []).append(row)
    out.write(f"campaign {campaign}: {len(runs)} run(s)\n")
    for kind, members in kinds.items():
        out.write(f"\n{kind}:\n")
        print_table(
            out,
            ["model", "performance", "sd", "n", "status"],
            [[r["model"], r["performance"], r["sd"], r["n"], r["status"]] for r in members],
            indent=2,
        )
    _print_score(runs, out)
    for run_dir in runs:
        out.write(f"\n== {run_dir}\n")
        try:
            result(dataclasses.replace(options, dir=run_dir, id=None), out)
        except CaramelError as exc:
            print(f"error: {exc}", file=sys.stderr)
    out.flush()
    path = perf_csv or "perf.csv"
    extra = list(dict.fromkeys(k for row in rows for k in row if k not in PERF_COLUMNS))
    from caramel.fs.writes import replacing

    with replacing(path, newline="") as handle:  # whole or not at all, never through a link
        writer = csv.DictWriter(handle, PERF_COLUMNS + extra, restval="")
        writer.writeheader()
        writer.writerows(rows)
    print(f"\nwrote {path} ({len(rows)} rows)", file=sys.stderr)
    return 2 if failures(campaign) else 0


def _print_score(runs: list[str], out: TextIO) -> None:
    """The suite's score and failure rate, milabench's (consumers/history/suite_score.py)."""
    from caramel.consumers.history.suite_score import suite_score

    members = [m for run_dir in runs for m in member_scores(run_dir)]
    if not members:
        return
    suite = suite_score(members)
    failed, ran = sum(m.failed for m in members), sum(m.ran for m in members)
    out.write(
        f"\nscore (milabench's weighted geometric mean of {len(members)} figure(s)): "
        f"{_num(suite.score) or '-'}\nfailure rate: {100 * suite.failure_rate:.2f}% "
        f"({failed} of {ran} workpackages)\n"
    )


def member_scores(run_dir: str) -> list[MemberScore]:
    """A run's figures whose larger values are better, each with its score's parts (the run's
    weight, workpackages and failures); one figure NaN (scoring 0) when it has none."""
    from caramel.cli.methodology import with_copies
    from caramel.consumers.history.methodology import is_result
    from caramel.consumers.history.metrics import collect
    from caramel.consumers.history.suite_score import MemberScore
    from caramel.stages.analyse import from_run
    from caramel.stages.analyse.estimators import estimator_of, pool, summarise
    from caramel.stages.report.results import history_tables, produce
    from caramel.vocabulary import Direction

    inp = from_run(run_dir)
    declared = {s.estimator for s in inp.benchmark.steps.values() if s.estimator}
    estimator = estimator_of(declared.pop() if len(declared) == 1 else "")
    weight = inp.benchmark.meta.weight
    weight = 1.0 if weight is None else weight
    ran = [wp for wp in inp.workpackages if wp.started or wp.state != WpState.OPEN]
    failed = sum(wp.state in (WpState.FAILED, WpState.CANCELLED) for wp in ran)
    figures = [
        m
        for m in with_copies(inp, collect(inp, history_tables(inp, produce(inp).made)))
        if is_result(m) and m.direction == Direction.HIGHER.value
    ]
    name = inp.benchmark.name
    made = [
        MemberScore(
            f"{name}:{m.key}",
            pool(m.copies, estimator).score if m.copies else summarise(m.samples, estimator).mean,
            weight,
            len(ran),
            failed,
        )
        for m in figures
    ]
    return made or [MemberScore(name, math.nan, weight, len(ran), failed)]


def _perf_rows(run_dir: str, history_path: str | None) -> list[PerfRow]:
    """One perf.csv row per figure of the run (mean over repeats), one per failed workpackage and
    one per finished workpackage without a figure (MAD's FAILURE row)."""
    from caramel.consumers.history.metrics import collect
    from caramel.consumers.history.provenance import run_record
    from caramel.stages.analyse import from_run
    from caramel.stages.analyse.performance import collect as collect_figures
    from caramel.stages.analyse.performance import uses_performance_lines
    from caramel.stages.report.performance import MODEL_ROW
    from caramel.stages.report.performance import TABLE as PERFORMANCE_TABLE
    from caramel.stages.report.results import history_tables, produce

    inp = from_run(run_dir)
    record = run_record(run_dir)
    found = collect_figures(inp) if uses_performance_lines(inp) else None
    extras = {(f.model, f.metric, f.model_row): f.extra for f in found.figures} if found else {}
    by_wp = {wp.id: wp for wp in inp.workpackages}
    prov = _provenance(inp, record, run_dir)
    previous = _previous_figures(record, history_path)
    out: list[PerfRow] = []
    for metric in collect(inp, history_tables(inp, produce(inp).made)):
        config = {k: v for k, v in metric.row.items() if k not in ("model", "metric", MODEL_ROW)}
        model = metric.row.get("model") or inp.benchmark.name
        detail = ",".join(f"{k}={v}" for k, v in config.items())
        unit = metric.row.get("metric") or metric.unit
        # madengine's metric column is the metric alone (a `performance:` line's or a CSV
        # row's); a figure of a pattern is named by it
        name = metric.name if metric.table != PERFORMANCE_TABLE else ""
        before = previous.get((metric.table, metric.key, metric.name))
        change = (
            "" if not before or math.isnan(metric.mean) else _num((metric.mean / before - 1) * 100)
        )
        rows_of_model = {MODEL_ROW: metric.row[MODEL_ROW]} if MODEL_ROW in metric.row else {}
        extra = extras.get((model, unit, int(metric.row.get(MODEL_ROW, 1))), {})
        out.append(
            dict(
                prov,
                **extra,
                **rows_of_model,
                model=model + f"[{detail}]" * bool(detail),
                performance=_num(metric.mean),
                metric=" ".join(x for x in (name, unit) if x),
                relative_change=change,
                status="SUCCESS",
                sd=_num(metric.sd),
                n=metric.n,
                reason="",
            )
        )
    for row in found.failed if found else []:  # a CSV row without a number: madengine's FAILURE row
        out.append(
            dict(
                prov,
                **row.extra,
                model=row.model,
                performance="",
                metric=row.metric,
                status="FAILURE",
                sd="",
                n=0,
                reason=row.reason,
            )
        )
    missing = found.missing if found else {}
    for wp in inp.workpackages:
        if (
            wp.state
            in (WpState.FAILED, WpState.CANCELLED, WpState.OPEN, WpState.RUNNING, WpState.WAITING)
            or wp.id in missing
        ):
            state = "failed" if wp.id in missing else wp.state
            model = (
                inp.benchmark.name
                if len(by_wp) == 1
                else f"{inp.benchmark.name}[wp {wp.id} {wp.step}]"
            )
            out.append(
                dict(
                    prov,
                    model=model,
                    performance="",
                    metric="",
                    status="FAILURE" if state in ("failed", "cancelled") else state.upper(),
                    sd="",
                    n=0,
                    reason=missing.get(wp.id) or wp.reason,
                )
            )
    _add_workpackage_facts(out, by_wp, inp)
    return out


def _provenance(inp: AnalysisInput, record: RunRecord, run_dir: str) -> PerfRow:
    """The columns every row of a run shares: madengine's where caramel knows them, and caramel's
    own."""
    meta = inp.benchmark.meta
    system = inp.benchmark.system
    tags = [*meta.tags, *record.tags]
    image, _, digest = (record.container or "").partition("@")
    gpus = (system.gpus_per_node if system is not None else 0) or ""
    duration = _num(record.ended - record.started) if record.started and record.ended else ""
    return {
        "n_gpus": meta.devices or gpus,
        "nnodes": len(record.nodes.split()) if record.nodes else "",
        "gpus_per_node": gpus,
        "training_precision": meta.precision,
        "tags": ",".join(dict.fromkeys(tags)),
        "docker_image": image,
        "docker_sha": digest,
        "git_commit": record.git_commit,
        "machine_name": record.host,
        "deployment_type": (system.scheduler if system is not None else "") or "local",
        "launcher": system.launcher if system is not None else "",
        "test_duration": duration,
        "system": record.system,
        "benchmark": record.benchmark,
        "run_id": os.path.basename(run_dir),
        "run_dir": record.run_dir,
        "file": record.file,
        "caramel_version": record.caramel_version,
        "host": record.host,
        "nodes": record.nodes,
        "job_ids": " ".join(record.job_ids),
        "container": record.container,
        "started": record.started or "",
        "ended": record.ended or "",
    }


def _add_workpackage_facts(
    rows: list[PerfRow], by_wp: dict[int, WPRecord], inp: AnalysisInput
) -> None:
    """A models.json entry's own facts (args, dockerfile, data, the GPUs and architecture its script
    was given), from its one workpackage."""
    from caramel.stages.analyse.performance import mad_environment

    mad = [wp for wp in by_wp.values() if "mad_model_dir" in wp.params]
    if not mad:
        return
    wp = mad[-1]
    env = mad_environment(wp)
    facts = {
        "args": wp.params.get("mad_args", ""),
        "docker_file": wp.params.get("mad_dockerfile", ""),
        "dataname": wp.params.get("mad_data", ""),
        "gpu_architecture": env.get("MAD_SYSTEM_GPU_ARCHITECTURE", ""),
    }
    if env.get("MAD_RUNTIME_NGPUS"):
        facts["n_gpus"] = env["MAD_RUNTIME_NGPUS"]
    for row in rows:
        row.update(facts)


def _previous_figures(
    record: RunRecord, history_path: str | None
) -> dict[tuple[str, str, str], float]:
    """(table, configuration, name) -> mean of the newest earlier run of the same benchmark in the
    history: what relative_change compares with (percent)."""
    from caramel.consumers.history.engine import is_url
    from caramel.consumers.history.store import History, default_path

    path = history_path or default_path()
    if not is_url(path) and not os.path.isfile(path):
        return {}
    with History.open(path) as history:
        earlier = [
            r
            for r in history.runs(record.benchmark)
            if r.run_key != record.run_key and (r.started or 0) < (record.started or math.inf)
        ]
        out: dict[tuple[str, str, str], float] = {}
        for run in earlier:  # oldest first: the newest run's figure stays
            out.update(
                {
                    (m.table, m.key, m.name): m.mean
                    for m in history.metrics(run.run_key)
                    if m.samples and m.mean
                }
            )
    return out


def _num(value: float) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.6g}"
