"""`bench run FILE`: expand the benchmark, create its run folder and run its workpackages."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.cli.comment import one_line
from caramel.cli.common import BenchmarkOptions, add_benchmark_args, add_predict_args, load_named
from caramel.cli.jube_flags import AfterRun, add_after_args
from caramel.cli.spellings import add_old_spelling
from caramel.cli.status import print_summary
from caramel.errors import CaramelError, RunError
from caramel.settings import current

COMMAND = "run"  # `bench run` (cli/main.py finds this module by it)

# the engine and the model are imported where a run starts (tests/cli/test_startup_imports.py)
if TYPE_CHECKING:
    from caramel.stages.engine.rounds import AutoRepeat
    from caramel.stages.report.autorepeat import Judge
    from caramel.stages.spec.model import Benchmark, Repeat


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run", help="run a benchmark: create its run folder and run every workpackage"
    )
    add_benchmark_args(parser, file_optional=True)
    parser.add_argument(
        "--suite",
        nargs="+",
        metavar="TAG",
        default=None,
        help="run every benchmark with any of these tags (MAD's rule) as one campaign",
    )
    parser.add_argument(
        "-o",
        "--outpath",
        metavar="OUTPATH",
        help=(
            "folder for the run folders instead of the file's outpath "
            "(relative to the current folder)"
        ),
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="show the workpackages and their do's; create nothing",
    )
    parser.add_argument(
        "--wait-limit",
        dest="timeout",
        type=float,
        metavar="SECONDS",
        help="fail a workpackage that waits longer than this for its done file",
    )
    add_old_spelling(parser, "--timeout", "--wait-limit")
    parser.add_argument(
        "--repeat",
        default=None,
        metavar="N|auto",
        help="run every workpackage N times (N iterations of each step; "
        "tables give the mean, the history and bench compare the spread); "
        "auto: repeat until every figure's 95 %% interval is within "
        "--repeat-target (default: the file's repeat, else 1)",
    )
    parser.add_argument(
        "--repeat-target",
        type=float,
        default=2.0,
        metavar="PCT",
        help="--repeat auto: the 95 %% interval's half-width, in %% of the mean, "
        "every figure must reach (default 2)",
    )
    parser.add_argument(
        "--repeat-min",
        type=int,
        default=3,
        metavar="N",
        help="--repeat auto: repeats made before judging (default 3)",
    )
    parser.add_argument(
        "--repeat-max",
        type=int,
        default=30,
        metavar="N",
        help="--repeat auto: at most N repeats (default 30)",
    )
    parser.add_argument(
        "--repeat-time",
        type=float,
        default=None,
        metavar="SECONDS",
        help="--repeat auto: no repeat starts after SECONDS (default: no limit)",
    )
    parser.add_argument(
        "--time-limit",
        metavar="SECONDS|HH:MM:SS",
        default=None,
        help="time limit of every step's do's, over the file's timeout and metadata (0: none)",
    )
    parser.add_argument(
        "--copies",
        metavar="N|all",
        default=None,
        help="run N copies of each workpackage at once, each on its share of cores and devices",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    add_after_args(parser)
    parser.add_argument(
        "-m", "--comment", default="", metavar="TEXT", help="the run's comment (bench comment)"
    )
    parser.add_argument(
        "--time-from-prediction",
        action="store_true",
        help=(
            "on a SLURM system, a job's --time from bench predict (+ --time-margin) "
            "where the file sets no timelimit"
        ),
    )
    parser.add_argument(
        "--time-margin",
        type=float,
        default=25.0,
        metavar="PERCENT",
        help="added to the predicted job time's 90 %% high end (default 25)",
    )
    add_predict_args(parser)
    parser.set_defaults(func=run)


def repeat(bench: Benchmark, times: int) -> None:
    """Each step `times` as many iterations (JUBE's way of running a workpackage again)."""
    bench.steps = {
        name: dataclasses.replace(step, iterations=step.iterations * times, repeats=times)
        for name, step in bench.steps.items()
    }


def planned_repeats(bench: Benchmark, options: RunOptions) -> AutoRepeat | None:
    """`bench` with the repeats of --repeat, else of the file's `repeat`: N times its iterations, or
    with --repeat auto its most repeats (then the rule that stops it, else None)."""
    from caramel.stages.engine.rounds import AutoRepeat

    times = options.repeat if options.repeat is not None else bench.repeat
    bench.repeat = times  # stored with the run: the tables' caption names --repeat auto
    rule = (options.auto or AutoRepeat()) if times.auto else None
    if rule is not None or times.times > 1:
        repeat(bench, rule.maximum if rule is not None else times.times)
    return rule


def judge(rule: AutoRepeat, quiet: bool, out: TextIO) -> Judge:
    """The judge of a `--repeat auto` run (report.autorepeat), telling `out` of each repeat
    unless quiet."""
    from caramel.stages.report.autorepeat import Judge

    return Judge(rule, None if quiet else out)


@dataclass(frozen=True)
class RunOptions:
    """`bench run`'s arguments, checked; a campaign gives each member its own copy (cli.suite)."""

    source: BenchmarkOptions
    suite: tuple[str, ...] | None = None
    outpath: str | None = None  # -o, else $JUBE_BENCHMARK_OUTPATH (caramel.settings)
    dry_run: bool = False
    timeout: float | None = None
    repeat: Repeat | None = None  # --repeat N|auto; None: the file's `repeat` (spec.model.Repeat)
    auto: AutoRepeat | None = None  # when --repeat auto stops (engine.rounds; None: its defaults)
    time_limit: float | None = None  # --time-limit in seconds
    copies: str | None = None  # --copies, checked
    quiet: bool = False
    comment: str = ""  # -m: the run's comment, one line (cli.comment)
    after: AfterRun = AfterRun()  # JUBE's -a/-r: analyse, or print the tables, when it stops
    exit_on_error: bool = False  # JUBE's -e: no workpackage starts after one failed
    time_from_prediction: bool = False
    time_margin: float = 25.0
    history: str | None = None
    learn_from: str | None = None
    under_cwd: bool = (
        False  # run folders under the current folder (a campaign's members), as a name's are
    )
    on_created: Callable[[str], None] | None = (
        None  # told each run folder once it exists (a campaign records it)
    )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunOptions:
        from caramel.stages.engine.rounds import AutoRepeat
        from caramel.stages.spec.limits import parse_copies, parse_duration

        return cls(
            source=BenchmarkOptions.from_args(args),
            suite=tuple(args.suite) if args.suite else None,
            outpath=args.outpath or current().jube_outpath or None,
            dry_run=args.dry_run,
            timeout=args.timeout,
            repeat=_repeat_arg(args.repeat),
            auto=AutoRepeat(args.repeat_target, args.repeat_min, args.repeat_max, args.repeat_time),
            time_limit=None
            if args.time_limit is None
            else parse_duration(args.time_limit, "--time-limit"),
            copies=None if args.copies is None else parse_copies(args.copies),
            quiet=args.quiet,
            comment=args.comment,
            after=AfterRun.from_args(args),
            exit_on_error=args.exit_on_error,
            time_from_prediction=args.time_from_prediction,
            time_margin=args.time_margin,
            history=args.history,
            learn_from=args.learn_from,
        )


def _again(run_dir: str, last: bool) -> str:
    """How the user names this run from here: `-i last` for the last run a call made, else its
    folder (a file with several benchmarks makes several runs)."""
    import shlex

    return "-i last" if last else shlex.quote(os.path.relpath(run_dir))


def _repeat_arg(text: str | None) -> Repeat | None:
    from caramel.stages.spec.limits import parse_repeat

    if text is None:
        return None
    try:
        return parse_repeat(text, what="--repeat")
    except CaramelError:
        raise RunError(
            f"--repeat {text}: expected a number of runs of at least 1, or auto",
            hint="bench run FILE --repeat 5, or --repeat auto [--repeat-target 2 --repeat-max 30]",
        ) from None


def run(args: argparse.Namespace) -> int:
    return run_benchmarks(RunOptions.from_args(args), sys.stdout)


def run_benchmarks(options: RunOptions, out: TextIO) -> int:
    """`bench run`: each benchmark of the file (or, with --suite, each the tags select) run; the
    exit code."""
    if options.suite:
        from caramel.cli.suite import run_suite

        return run_suite(options, out, run_benchmarks)
    if not options.source.file:
        raise RunError(
            "bench run needs a benchmark file or name, or --suite TAG",
            hint="bench run FILE --tag ..., or bench run --suite cpu-smoke --tag local",
        )
    # the engine and the model, imported here: `bench --help` and `bench run --help` list this
    # command without them
    from caramel.stages.engine.copies import apply_copies
    from caramel.stages.engine.session import dry_run

    if not options.dry_run:  # a run of a shipped CPU trainer measures its layout once per node
        from caramel.cli.layout import measure_first_use
        from caramel.payloads.workloads.layout import measure_on_first_use

        measure_on_first_use(measure_first_use)
    loaded = load_named(options.source)
    code = 0
    for index, bench in enumerate(loaded.benchmarks):
        bench = apply_copies(bench, options.copies)
        rule = planned_repeats(bench, options)
        bench = _as_options_say(bench, options, loaded.by_name)
        if options.dry_run:
            lines = dry_run(bench, max_workpackages=options.source.max_workpackages)
            out.writelines(line + "\n" for line in lines)
            continue
        last = index == len(loaded.benchmarks) - 1
        code = max(code, _run_one(bench, rule, options, last, out))
    return code


def _as_options_say(bench: Benchmark, options: RunOptions, by_name: bool) -> Benchmark:
    """The benchmark with the job time --time-from-prediction predicts, the outpath -o gives (or
    the current folder's) and the comment -m gives."""
    if options.time_from_prediction:
        from caramel.cli.predict import predicted_time

        bench = predicted_time(
            bench,
            options.history,
            options.learn_from,
            list(options.source.systems),
            options.time_margin,
        )
    bench.outpath = _outpath(bench.outpath, options, by_name)
    if options.comment:
        bench.comment = one_line(options.comment)
    return bench


def _outpath(outpath: str, options: RunOptions, by_name: bool) -> str:
    """-o OUTPATH; the file's outpath in the current folder for a benchmark given by name (never
    beside an installed file) or a campaign's member; else the file's own."""
    if options.outpath:
        return os.path.abspath(os.path.expandvars(os.path.expanduser(options.outpath)))
    if by_name or options.under_cwd:
        return os.path.abspath(os.path.basename(outpath))
    return outpath


def _run_one(
    bench: Benchmark, rule: AutoRepeat | None, options: RunOptions, last: bool, out: TextIO
) -> int:
    """Run one benchmark and print its summary; its exit code (and that of the JUBE flags' -a/-r
    after it)."""
    from caramel.stages.engine.session import scheduler_for, start_run
    from caramel.stages.engine.settings import Settings

    settings = Settings(
        timeout=options.timeout,
        time_limit=options.time_limit,
        repeat_auto=None if rule is None else rule.to_dict(),
        stop_after_failure=options.exit_on_error,
    )
    summary = start_run(
        bench,
        settings,
        quiet=options.quiet,
        scheduler=scheduler_for(bench),
        on_created=options.on_created,
        max_workpackages=options.source.max_workpackages,
        go_on=None if rule is None else judge(rule, options.quiet, out),
    )
    # a campaign's member: the campaign's own last line names `bench result -c last`
    again = None if options.on_created else _again(summary.run_dir, last)
    print_summary(summary, out, again=again)
    return max(summary.exit_code, options.after(summary.run_dir, out))
