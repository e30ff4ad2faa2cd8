"""`bench bisect FILE --tag ... --over KIND LIST`: the first environment of an ordered list whose
run regressed against the first one's, found as git bisect finds a commit (cli.bisection).

Each environment is one run of the benchmark, made a repeat at a time as `bench run --repeat auto`
makes it (engine.rounds): the first (the good one) until its figure's 95 % interval is within
`--repeat-target`, every other until the ratio of its figure to the first's, with its 99 %
interval (`bench compare`'s verdict, history.compare.judge), is decided against the band of
`--threshold`, or `--repeat-max` repeats say it cannot be. Every run is added to the history as
`bench result` adds it; the steps are kept in `<outpath>/bisect/`, so the same command (or
`bench bisect --continue`) goes on where it stopped. docs/cli.md, `bench bisect`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from caramel.cli.bisection import (
    Over,
    State,
    Step,
    Verdict,
    environment,
    estimate_steps,
    newest_state,
    next_step,
    parse_over,
    state_path,
    substitute,
)
from caramel.cli.common import BenchmarkOptions, add_benchmark_args, load_named
from caramel.errors import RunError
from caramel.settings import current

if TYPE_CHECKING:
    from caramel.consumers.history.metrics import Metric
    from caramel.stages.engine.rounds import AutoRepeat
    from caramel.stages.engine.settings import Summary
    from caramel.stages.spec.model import Benchmark

COMMAND = "bisect"  # `bench bisect` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "bisect",
        help="find the first environment of an ordered list (images, commits, modules, "
        "variables) whose run regressed against the first one's",
    )
    add_benchmark_args(parser, file_optional=True)
    parser.add_argument(
        "--over",
        nargs="+",
        default=None,
        metavar="KIND|VALUE",
        help="what changes from one run to the next, then its values in order, the good one "
        "first: env:NAME V1 V2 ..., param:NAME ..., image IMAGE1 ..., module NAME/VERSION ..., "
        "commit:REPO C1 C2 ... (or GOOD..BAD)",
    )
    parser.add_argument(
        "--figure",
        metavar="NAME",
        help="the figure that decides (NAME or TABLE/NAME; default: the first with a direction)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="PERCENT",
        help="the band of no change, as bench compare's (default 2)",
    )
    parser.add_argument(
        "--repeat-target",
        type=float,
        default=2.0,
        metavar="PCT",
        help="the first run's repeats: until its 95 %% interval is within PCT %% (default 2)",
    )
    parser.add_argument(
        "--repeat-min", type=int, default=3, metavar="N", help="repeats before judging (default 3)"
    )
    parser.add_argument(
        "--repeat-max",
        type=int,
        default=30,
        metavar="N",
        help="at most N repeats per environment; then the step is undecided (default 30)",
    )
    parser.add_argument(
        "-o",
        "--outpath",
        metavar="OUTPATH",
        help="folder for the runs and bisect/ (default: the file's)",
    )
    parser.add_argument(
        "--history", metavar="FILE", help="history database (default $CARAMEL_HISTORY)"
    )
    parser.add_argument(
        "--continue",
        dest="resume",
        action="store_true",
        help="go on with the bisection last written under OUTPATH (-o, default: here)",
    )
    parser.set_defaults(func=run)


@dataclass
class Bisection:
    """One bisection's settings, checked."""

    source: BenchmarkOptions
    over: Over
    rule: AutoRepeat
    figure: str | None
    threshold: float | None
    outpath: str
    history: str | None
    arguments: list[str]  # the command's own arguments, kept with its state (--continue)
    out: TextIO = field(default_factory=lambda: sys.stdout)


def run(args: argparse.Namespace) -> int:
    if args.resume and not args.file:
        args = _stored_arguments(args)
    return bisect(_bisection(args), sys.stdout)


def _stored_arguments(args: argparse.Namespace) -> argparse.Namespace:
    """The arguments of the bisection last written under -o (or here)."""
    from caramel.cli.main import build_parser

    outpath = args.outpath or current().jube_outpath or "."
    stored = State.load(newest_state(outpath)).arguments
    return build_parser(["bisect", *stored]).parse_args(["bisect", *stored])


def _bisection(args: argparse.Namespace) -> Bisection:
    from caramel.stages.engine.rounds import AutoRepeat

    if not args.file or not args.over:
        raise RunError(
            "bench bisect needs a benchmark file and --over KIND LIST",
            hint="bench bisect FILE --tag ... --over env:NAME V1 V2 ..., "
            "or bench bisect --continue -o OUTPATH",
        )
    over = parse_over(args.over)
    rule = AutoRepeat(args.repeat_target, args.repeat_min, args.repeat_max)
    source = BenchmarkOptions.from_args(args)
    outpath = args.outpath or current().jube_outpath or ""
    file = os.path.abspath(args.file) if os.path.exists(args.file) else args.file  # else a name
    arguments = [
        file,
        *_listed("--tag", args.tag),
        "--over",
        over.spelled(),
        *over.values,
        *_valued_flags(args, outpath),
        *_repeated_flags(args),
    ]
    return Bisection(
        source, over, rule, args.figure, args.threshold, outpath, args.history, arguments
    )


def _valued_flags(args: argparse.Namespace, outpath: str) -> list[str]:
    """The options of one value given, as the state keeps them (the outpath absolute)."""
    arguments: list[str] = []
    for flag, value in (
        ("--figure", args.figure),
        ("--threshold", args.threshold),
        ("--repeat-target", args.repeat_target),
        ("--repeat-min", args.repeat_min),
        ("--repeat-max", args.repeat_max),
        ("--outpath", os.path.abspath(outpath) if outpath else None),
        ("--history", args.history),
    ):
        arguments += [] if value is None else [flag, str(value)]
    return arguments


def _repeated_flags(args: argparse.Namespace) -> list[str]:
    """The options given once per value, as the state keeps them (folders absolute)."""
    arguments: list[str] = []
    for flag, values in (
        ("--systems", args.systems),
        ("--include-path", args.include_path),
        ("--only-bench", args.only_bench),
        ("--benchmarks", args.benchmarks),
    ):
        for value in values:
            arguments += [flag, os.path.abspath(value) if flag != "--only-bench" else value]
    return arguments


def _listed(flag: str, values: list[str]) -> list[str]:
    return [flag, *values] if values else []


def bisect(job: Bisection, out: TextIO) -> int:
    """The bisection: its steps run (or taken from its state), each printed, then its answer;
    0 when it found the first bad one or none regressed, 1 when a step failed or is undecided."""
    values = job.over.values
    with environment(job.over, values[0]):
        bench = _one_benchmark(job)
    outpath = os.path.abspath(job.outpath or bench.outpath)
    if "--outpath" not in job.arguments:  # the file's, as found from here (--continue elsewhere)
        job.arguments += ["--outpath", outpath]
    path = state_path(outpath, bench.name, _identity(job, bench))
    state = State.load(path) if os.path.isfile(path) else State(path, job.arguments)
    state.arguments = job.arguments
    out.write(
        f"bisecting {bench.name} over {job.over.spelled()} ({len(values)} environments, the first "
        f"good); state in {path}\n"
    )
    job.out = out
    for _, kept in sorted(state.steps.items()):
        _show_step(job, kept, out, "(kept from an earlier call)")
    if not _run_steps(job, state, outpath, out):
        return 1
    _answer(job, state, out)
    return 0


def _identity(job: Bisection, bench: Benchmark) -> dict[str, object]:
    """What makes a bisection the same one: its state is found by it."""
    return {
        "file": os.path.abspath(bench.file or job.source.file or ""),
        "tags": sorted(job.source.tags),
        "over": [job.over.kind.value, job.over.name, *job.over.values],
        "figure": job.figure,
        "threshold": job.threshold,
    }


def _run_steps(job: Bisection, state: State, outpath: str, out: TextIO) -> bool:
    """The environments the bisection needs run, one at a time, each saved in its state and
    shown; False when one failed or stays undecided."""
    reference: Metric | None = None
    while (bounds := next_step(state.steps, len(job.over.values))).next is not None:
        index = bounds.next
        if _final(state.steps.get(index), job.rule):
            return False  # shown above, with what would decide it
        if bounds.bad is not None:
            _say_left(bounds.bad - index - 1, bounds.bad - bounds.good, out)
        if index:
            reference = reference or _figure_of(job, state.steps[0].run_dir)
        step = _run_environment(job, outpath, index, reference)
        state.steps[index] = step
        state.save()
        _show_step(job, step, out)
        if step.verdict in (Verdict.FAILED, Verdict.UNDECIDED):
            return False
    return True


def _say_left(left: int, span: int, out: TextIO) -> None:
    """How many environments are left after this one, and roughly how many steps, as git
    bisect says."""
    out.write(
        f"Bisecting: {left} environment(s) left to test after this "
        f"(roughly {estimate_steps(span)} step(s))\n"
    )


def _final(step: Step | None, rule: AutoRepeat) -> bool:
    """A step already run, undecided with as many repeats as allowed now: running it again decides
    nothing more (a larger --repeat-max does)."""
    if step is None:
        return False
    return step.verdict is Verdict.UNDECIDED and step.repeat_max >= rule.maximum


def _one_benchmark(job: Bisection) -> Benchmark:
    loaded = load_named(job.source)
    if len(loaded.benchmarks) != 1:
        names = ", ".join(b.name for b in loaded.benchmarks)
        raise RunError(
            f"{job.source.file}: {len(loaded.benchmarks)} benchmarks ({names}); a bisection "
            "runs one",
            hint="choose one with --only-bench NAME",
        )
    return loaded.benchmarks[0]


def _run_environment(job: Bisection, outpath: str, index: int, reference: Metric | None) -> Step:
    """One environment's run, a repeat at a time until its verdict is known, into the history."""
    from caramel.cli.run import repeat
    from caramel.stages.engine.session import scheduler_for, start_run
    from caramel.stages.engine.settings import Settings
    from caramel.stages.spec.model import Repeat

    value = job.over.values[index]
    out = job.out
    out.write(f"running [{index}] {job.over.describe(value)}, a repeat at a time\n")
    out.flush()
    with environment(job.over, value):
        bench = substitute(_one_benchmark(job), job.over, value)
        repeat(bench, job.rule.maximum)
        bench.repeat = Repeat(auto=True)
        bench.outpath = outpath
        settings = Settings(repeat_auto=job.rule.to_dict())
        decide = Decider(job, reference)
        summary = start_run(
            bench, settings, quiet=True, scheduler=scheduler_for(bench), go_on=decide
        )
    step = Step(index, value, summary.run_dir, repeat_max=job.rule.maximum)
    if summary.failed or summary.waiting:
        step.verdict = Verdict.FAILED
        wp_id, name, why = (summary.failed or summary.waiting)[0]
        state = "failed" if summary.failed else "waits for a job"
        step.why = f"workpackage {wp_id} ({name}) {state}: {why}"
        return step
    _record(job, summary)
    metric = _figure_of(job, summary.run_dir)
    _fill(step, metric, reference, job.threshold)
    return step


def _record(job: Bisection, summary: Summary) -> None:
    """The run into the history, by `bench result`'s path (history.record.add_quietly)."""
    from caramel.consumers.history.record import add_quietly
    from caramel.stages.analyse import from_run
    from caramel.stages.report.results import history_tables

    inp = from_run(summary.run_dir)
    add_quietly(job.history, inp, lambda: history_tables(inp), unchanged=False)


def _figure_of(job: Bisection, run_dir: str) -> Metric:
    """The figure that decides, of the run at `run_dir`: --figure's (NAME or TABLE/NAME), else
    the first with a direction; one configuration of it."""
    from caramel.consumers.history.metrics import collect
    from caramel.stages.analyse import from_run
    from caramel.stages.report.results import history_tables

    inp = from_run(run_dir)
    metrics = collect(inp, history_tables(inp))
    found = _named(metrics, job.figure) if job.figure else _first_directed(metrics)
    if not found:
        names = ", ".join(sorted({f"{m.table}/{m.name}" for m in metrics})) or "none"
        wanted = f"figure '{job.figure}'" if job.figure else "a figure with a direction"
        raise RunError(
            f"{run_dir}: the run has no {wanted}; its figures: {names}",
            hint="--figure TABLE/NAME names one; a figure needs a unit or a direction "
            "(direction: lower|higher) to be judged",
        )
    _refuse_undecidable(found, run_dir)
    return found[0]


def _named(metrics: list[Metric], figure: str) -> list[Metric]:
    """--figure's configurations: the figures named NAME or TABLE/NAME."""
    return [m for m in metrics if figure in (m.name, f"{m.table}/{m.name}")]


def _first_directed(metrics: list[Metric]) -> list[Metric]:
    """The configurations of the first figure with a direction."""
    from caramel.consumers.history.compare import way_of

    first = next((m for m in metrics if way_of(m.direction)), None)
    if first is None:
        return []
    return [m for m in metrics if (m.table, m.name) == (first.table, first.name)]


def _refuse_undecidable(found: list[Metric], run_dir: str) -> None:
    """An error unless the figure has one configuration and a direction: a bisection judges
    one figure's change."""
    from caramel.consumers.history.compare import way_of

    figure = f"{found[0].table}/{found[0].name}"
    if len(found) > 1:
        raise RunError(
            f"{run_dir}: figure {figure} has {len(found)} configurations; a bisection judges one",
            hint="select one configuration with --tag (or a parameter of one value)",
        )
    if not way_of(found[0].direction):
        raise RunError(
            f"{run_dir}: figure {figure} has no direction: whether a change regressed is unknown",
            hint="declare direction: lower|higher on its pattern (or a unit such as s)",
        )


def _fill(step: Step, metric: Metric, reference: Metric | None, threshold: float | None) -> None:
    """`step` with the figure's mean, its interval, and (not the first) its verdict."""
    from caramel.consumers.history.compare import judge
    from caramel.stages.analyse.intervals import mean_interval

    shown = mean_interval(metric.mean, metric.sd, metric.n)
    step.n, step.mean, step.low, step.high = metric.n, metric.mean, shown.low, shown.high
    if reference is None:
        step.verdict, step.why = Verdict.GOOD, "the first environment: the good one"
        step.ratio = step.ratio_low = step.ratio_high = 1.0
        return
    verdict = judge(metric, reference.mean, reference.sd, reference.n, threshold)
    step.ratio, step.ratio_low, step.ratio_high = (
        verdict.ratio,
        verdict.ratio_low,
        verdict.ratio_high,
    )
    step.verdict = _STEP_VERDICT.get(verdict.verdict.value, Verdict.UNDECIDED)
    step.why, step.needed = verdict.why, verdict.needed


_STEP_VERDICT = {
    "regressed": Verdict.REGRESSED,
    "within noise": Verdict.NOT_REGRESSED,
    "improved": Verdict.NOT_REGRESSED,
}


@dataclass
class Decider:
    """The `go_on` of engine.rounds for one environment's run: the first run until its figure
    converges (report.autorepeat's rule), every other until its verdict is decided."""

    job: Bisection
    reference: Metric | None
    started: float = field(default_factory=time.monotonic)

    def __call__(self, summary: Summary, done: int) -> str | None:
        from caramel.stages.analyse.convergence import half_width_pct
        from caramel.stages.report.autorepeat import Widest, verdict

        rule = self.job.rule
        if summary.failed or done < rule.minimum:
            return verdict(rule, done, time.monotonic() - self.started, summary, None)
        metric = _figure_of(self.job, summary.run_dir)
        if self.reference is None:
            widest = Widest(f"{metric.table}/{metric.name}", half_width_pct(metric.samples))
            return verdict(rule, done, time.monotonic() - self.started, summary, widest)
        step = Step(0, "")
        _fill(step, metric, self.reference, self.job.threshold)
        if step.verdict is not Verdict.UNDECIDED:
            return f"decided: {step.verdict} ({step.why})"
        if done >= rule.maximum:
            return f"max count: {done} repeats, undecided ({step.why})"
        return None


def _number(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4g}"


def _show_step(job: Bisection, step: Step, out: TextIO, note: str = "") -> None:
    """One step's evidence: its environment, n, mean [interval], ratio [interval], verdict."""
    line = (
        f"step [{step.index}] {job.over.describe(step.value)}: n {step.n}, mean "
        f"{_number(step.mean)} [{_number(step.low)}, {_number(step.high)}], ratio "
        f"{_number(step.ratio)} [{_number(step.ratio_low)}, {_number(step.ratio_high)}] "
        f"(99 %): {step.verdict}"
    )
    if note:
        line += f" {note}"
    out.write(line + "\n")
    if step.verdict in (Verdict.FAILED, Verdict.UNDECIDED):
        out.write(f"  why: {step.why}\n")
        out.write(f"  run: {step.run_dir}\n")
    if step.verdict is Verdict.UNDECIDED:
        more = f"--repeat-max {step.needed}" if step.needed else "a larger --repeat-max"
        out.write(
            f"  undecided after {step.n} repeats (at most {step.repeat_max}); {more} decides "
            "(run the same command with it: the steps done are kept)\n"
        )
    if step.verdict is Verdict.FAILED:
        out.write(
            "  run the same command again (or bench bisect --continue): done steps are kept\n"
        )
    out.flush()


def _answer(job: Bisection, state: State, out: TextIO) -> None:
    """Every step's evidence in the order of the environments, then the answer."""
    from caramel.stages.analyse.intervals import LEVEL

    level = f"{100 * LEVEL:g} %"
    out.write(
        f"\n{'#':>3}  {'environment':<28} {'n':>3}  mean [{level}]  ratio [{level}]  verdict\n"
    )
    for index, step in sorted(state.steps.items()):
        out.write(
            f"{index:>3}  {job.over.describe(step.value)[:28]:<28} {step.n:>3}  "
            f"{_number(step.mean)} [{_number(step.low)}, {_number(step.high)}]  "
            f"{_number(step.ratio)} [{_number(step.ratio_low)}, {_number(step.ratio_high)}]  "
            f"{step.verdict}\n"
        )
    bounds = next_step(state.steps, len(job.over.values))
    good = state.steps[bounds.good]
    if bounds.bad is None:
        out.write(
            f"no regression: the last environment, {job.over.describe(good.value)}, did not "
            f"regress against the first ({good.why})\n"
        )
        return
    bad = state.steps[bounds.bad]
    out.write(
        f"first bad: [{bad.index}] {job.over.describe(bad.value)} ({bad.run_dir})\n"
        f"last good: [{good.index}] {job.over.describe(good.value)} ({good.run_dir})\n"
        f"found in {len(state.steps) - 1} step(s) after the first environment's run\n"
    )
