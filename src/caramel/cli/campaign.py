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
import functools
import math
import os
import sys
from typing import TYPE_CHECKING, TextIO

from caramel.cli.tables import print_table
from caramel.errors import CaramelError, RunError
from caramel.vocabulary import WpState

if TYPE_CHECKING:
    from caramel.cli.result import ResultOptions
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.store import History, RunRecord
    from caramel.consumers.history.suite_score import MemberScore
    from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
    from caramel.stages.analyse.performance import Collected, FailedRow
    from caramel.stages.spec.estimator import Estimator

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
    return _on_each_run(args, runs)


def _on_each_run(args: argparse.Namespace, runs: list[str]) -> int:
    """The command on each run in turn, as if `DIR` named it; the worst exit code (2 for an error,
    which does not stop the others)."""
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
    from caramel.stages.state.campaigns import failures

    rows = [row for run_dir in runs for row in _perf_rows(run_dir, options.history)]
    rows += [_unreadable_member(*failure) for failure in failures(campaign)]
    out.write(f"campaign {campaign}: {len(runs)} run(s)\n")
    _print_kinds(rows, out)
    _print_score(runs, out)
    _print_each_result(options, runs, out)
    out.flush()
    path = perf_csv or "perf.csv"
    _write_perf_csv(path, rows)
    print(f"\nwrote {path} ({len(rows)} rows)", file=sys.stderr)
    return 2 if failures(campaign) else 0


def _unreadable_member(benchmark: str, file: str, error: str) -> PerfRow:
    """The FAILURE row of a member whose benchmark file could not be read."""
    return dict(
        dict.fromkeys(PERF_COLUMNS, ""),
        model=benchmark,
        benchmark=benchmark,
        file=file,
        status="FAILURE",
        n=0,
        reason="cannot read: " + " ".join(error.split()),
    )


def _print_kinds(rows: list[PerfRow], out: TextIO) -> None:
    """One table per metric kind (the metric column), in the order the kinds first appear."""
    kinds: dict[str, list[PerfRow]] = {}
    for row in rows:
        kinds.setdefault(str(row["metric"] or "(no figure)"), []).append(row)
    for kind, members in kinds.items():
        out.write(f"\n{kind}:\n")
        print_table(
            out,
            ["model", "performance", "sd", "n", "status"],
            [[r["model"], r["performance"], r["sd"], r["n"], r["status"]] for r in members],
            indent=2,
        )


def _print_each_result(options: ResultOptions, runs: list[str], out: TextIO) -> None:
    """`bench result` on each run; an error names itself and the next run follows."""
    from caramel.cli.result import result

    for run_dir in runs:
        out.write(f"\n== {run_dir}\n")
        try:
            result(dataclasses.replace(options, dir=run_dir, id=None), out)
        except CaramelError as exc:
            print(f"error: {exc}", file=sys.stderr)


def _write_perf_csv(path: str, rows: list[PerfRow]) -> None:
    """perf.csv: PERF_COLUMNS, then the further columns of the rows in the order they appear."""
    from caramel.fs.writes import replacing

    extra = list(dict.fromkeys(k for row in rows for k in row if k not in PERF_COLUMNS))
    with replacing(path, newline="") as handle:  # whole or not at all, never through a link
        writer = csv.DictWriter(handle, PERF_COLUMNS + extra, restval="")
        writer.writeheader()
        writer.writerows(rows)


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
    from caramel.cli.methodology import declared_estimator
    from caramel.consumers.history.suite_score import MemberScore
    from caramel.stages.analyse import from_run

    inp = from_run(run_dir)
    estimator = declared_estimator(inp)
    weight = inp.benchmark.meta.weight
    weight = 1.0 if weight is None else weight
    ran, failed = _ran_and_failed(inp)
    name = inp.benchmark.name
    made = [
        MemberScore(f"{name}:{m.key}", _score(m, estimator), weight, ran, failed)
        for m in _higher_is_better(inp)
    ]
    return made or [MemberScore(name, math.nan, weight, ran, failed)]


def _ran_and_failed(inp: AnalysisInput) -> tuple[int, int]:
    """How many workpackages ran (started, or left the open state), and how many of them failed
    or were cancelled: milabench's failure rate's parts."""
    ran = [wp for wp in inp.workpackages if wp.started or wp.state != WpState.OPEN]
    return len(ran), sum(wp.state in (WpState.FAILED, WpState.CANCELLED) for wp in ran)


def _higher_is_better(inp: AnalysisInput) -> list[Metric]:
    """The run's result figures whose larger values are better, each with its copies."""
    from caramel.cli.methodology import with_copies
    from caramel.consumers.history.methodology import is_result
    from caramel.consumers.history.metrics import collect
    from caramel.stages.report.results import history_tables, produce
    from caramel.vocabulary import Direction

    return [
        m
        for m in with_copies(inp, collect(inp, history_tables(inp, produce(inp).made)))
        if is_result(m) and m.direction == Direction.HIGHER.value
    ]


def _score(metric: Metric, estimator: Estimator) -> float:
    """A figure's score: pooled over its copies, or its estimate over repeats without copies."""
    from caramel.stages.analyse.estimators import pool, summarise

    if metric.copies:
        return pool(metric.copies, estimator).score
    return summarise(metric.samples, estimator).mean


# WpStates a perf.csv reports as a row of their own (a workpackage without a figure)
_UNFINISHED = (WpState.FAILED, WpState.CANCELLED, WpState.OPEN, WpState.RUNNING, WpState.WAITING)


@dataclasses.dataclass
class _RunRows:
    """What every perf.csv row of one run draws on: the run, the columns its rows share, the
    history's earlier figures and its `performance:` lines or results CSVs (None: it has none)."""

    inp: AnalysisInput
    provenance: PerfRow
    previous: dict[tuple[str, str, str], float]
    found: Collected | None

    def figure(self, metric: Metric) -> PerfRow:
        """A figure's SUCCESS row: its mean over repeats, its change from the previous run."""
        from caramel.stages.report.performance import MODEL_ROW

        model = metric.row.get("model") or self.inp.benchmark.name
        unit = metric.row.get("metric") or metric.unit
        rows_of_model = {MODEL_ROW: metric.row[MODEL_ROW]} if MODEL_ROW in metric.row else {}
        return dict(
            self.provenance,
            **self._extra_columns(model, unit, int(metric.row.get(MODEL_ROW, 1))),
            **rows_of_model,
            model=_with_configuration(model, metric.row),
            performance=_num(metric.mean),
            metric=_metric_column(metric, unit),
            relative_change=self._change(metric),
            status="SUCCESS",
            sd=_num(metric.sd),
            n=metric.n,
            reason="",
        )

    @functools.cached_property
    def _extras(self) -> dict[tuple[str, str, int], dict[str, str]]:
        """(model, metric, model row) -> the further columns of the results CSV row it came from."""
        figures = self.found.figures if self.found else []
        return {(f.model, f.metric, f.model_row): f.extra for f in figures}

    def _extra_columns(self, model: str, metric: str, model_row: int) -> dict[str, str]:
        return self._extras.get((model, metric, model_row), {})

    def _change(self, metric: Metric) -> str:
        """relative_change: percent from the previous run's mean; empty without one."""
        before = self.previous.get((metric.table, metric.key, metric.name))
        if not before or math.isnan(metric.mean):
            return ""
        return _num((metric.mean / before - 1) * 100)

    def unreadable(self, row: FailedRow) -> PerfRow:
        """A CSV row without a number: madengine's FAILURE row."""
        return dict(
            self.provenance,
            **row.extra,
            model=row.model,
            performance="",
            metric=row.metric,
            status="FAILURE",
            sd="",
            n=0,
            reason=row.reason,
        )

    @property
    def failed_rows(self) -> list[FailedRow]:
        """The results CSVs' rows without a number."""
        return self.found.failed if self.found else []

    @property
    def missing(self) -> dict[int, str]:
        """Workpackage id -> why it finished without a figure."""
        return self.found.missing if self.found else {}

    def lacks_figure(self, wp: WPRecord) -> bool:
        """Whether the workpackage gets a row of its own: it did not finish, or has no figure."""
        return wp.state in _UNFINISHED or wp.id in self.missing

    def without_figure(self, wp: WPRecord) -> PerfRow:
        """A workpackage's row without a figure: FAILURE, or its state while it has not ended."""
        state = "failed" if wp.id in self.missing else wp.state
        name = self.inp.benchmark.name
        one = len(self.inp.workpackages) == 1
        return dict(
            self.provenance,
            model=name if one else f"{name}[wp {wp.id} {wp.step}]",
            performance="",
            metric="",
            status="FAILURE" if state in ("failed", "cancelled") else state.upper(),
            sd="",
            n=0,
            reason=self.missing.get(wp.id) or wp.reason,
        )


def _with_configuration(model: str, row: dict[str, str]) -> str:
    """madengine's model column: the model, then the figure's configuration as `[k=v,...]`."""
    from caramel.stages.report.performance import MODEL_ROW

    config = {k: v for k, v in row.items() if k not in ("model", "metric", MODEL_ROW)}
    detail = ",".join(f"{k}={v}" for k, v in config.items())
    return model + f"[{detail}]" * bool(detail)


def _metric_column(metric: Metric, unit: str) -> str:
    """madengine's metric column: the metric alone for a `performance:` line's or a CSV row's
    figure; a figure of a pattern is named by it."""
    from caramel.stages.report.performance import TABLE as PERFORMANCE_TABLE

    name = metric.name if metric.table != PERFORMANCE_TABLE else ""
    return " ".join(x for x in (name, unit) if x)


def _perf_rows(run_dir: str, history_path: str | None) -> list[PerfRow]:
    """One perf.csv row per figure of the run (mean over repeats), one per failed workpackage and
    one per finished workpackage without a figure (MAD's FAILURE row)."""
    from caramel.consumers.history.metrics import collect
    from caramel.consumers.history.provenance import run_record
    from caramel.stages.analyse import from_run
    from caramel.stages.analyse.performance import collect as collect_figures
    from caramel.stages.analyse.performance import uses_performance_lines
    from caramel.stages.report.results import history_tables, produce

    inp = from_run(run_dir)
    record = run_record(run_dir)
    found = collect_figures(inp) if uses_performance_lines(inp) else None
    run = _RunRows(
        inp, _provenance(inp, record, run_dir), _previous_figures(record, history_path), found
    )
    out = [run.figure(m) for m in collect(inp, history_tables(inp, produce(inp).made))]
    out += [run.unreadable(row) for row in run.failed_rows]
    out += [run.without_figure(wp) for wp in inp.workpackages if run.lacks_figure(wp)]
    _add_workpackage_facts(out, inp)
    return out


def _provenance(inp: AnalysisInput, record: RunRecord, run_dir: str) -> PerfRow:
    """The columns every row of a run shares: madengine's where caramel knows them, and caramel's
    own."""
    meta = inp.benchmark.meta
    tags = [*meta.tags, *record.tags]
    image, _, digest = (record.container or "").partition("@")
    system = _system_columns(inp)
    return {
        **system,
        "n_gpus": meta.devices or system["gpus_per_node"],
        "nnodes": len(record.nodes.split()) if record.nodes else "",
        "training_precision": meta.precision,
        "tags": ",".join(dict.fromkeys(tags)),
        "docker_image": image,
        "docker_sha": digest,
        "git_commit": record.git_commit,
        "machine_name": record.host,
        "test_duration": _duration(record),
        **_record_columns(record, run_dir),
    }


def _duration(record: RunRecord) -> str:
    """madengine's test_duration: seconds from the run's start to its end; empty while unknown."""
    if record.started and record.ended:
        return _num(record.ended - record.started)
    return ""


def _record_columns(record: RunRecord, run_dir: str) -> PerfRow:
    """caramel's own columns: where the run comes from and where it ran."""
    return {
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


def _system_columns(inp: AnalysisInput) -> PerfRow:
    """madengine's columns the run's system file tells: GPUs per node, scheduler and launcher."""
    system = inp.benchmark.system
    if system is None:
        return {"gpus_per_node": "", "deployment_type": "local", "launcher": ""}
    return {
        "gpus_per_node": system.gpus_per_node or "",
        "deployment_type": system.scheduler or "local",
        "launcher": system.launcher,
    }


def _add_workpackage_facts(rows: list[PerfRow], inp: AnalysisInput) -> None:
    """A models.json entry's own facts (args, dockerfile, data, the GPUs and architecture its script
    was given), from its one workpackage."""
    from caramel.stages.analyse.performance import mad_environment

    mad = [wp for wp in inp.workpackages if "mad_model_dir" in wp.params]
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
        out: dict[tuple[str, str, str], float] = {}
        for run in _earlier_runs(history, record):  # oldest first: the newest run's figure stays
            out.update(_means(history, run.run_key))
    return out


def _means(history: History, run_key: str) -> dict[tuple[str, str, str], float]:
    """(table, configuration, name) -> mean of a run's figures in the history that have one."""
    return {
        (m.table, m.key, m.name): m.mean for m in history.metrics(run_key) if m.samples and m.mean
    }


def _earlier_runs(history: History, record: RunRecord) -> list[RunRecord]:
    """The history's other runs of the record's benchmark that started before it, oldest first."""
    started = record.started or math.inf
    return [
        r
        for r in history.runs(record.benchmark)
        if r.run_key != record.run_key and (r.started or 0) < started
    ]


def _num(value: float) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.6g}"
