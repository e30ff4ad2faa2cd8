"""`bench run FILE`: expand the benchmark, create its run folder and run its workpackages."""

from __future__ import annotations

import argparse
import dataclasses
import os

from caramel.backends import schedulers
from caramel.cli.common import add_benchmark_args, load_benchmarks
from caramel.cli.predict import add_predict_args, predicted_time
from caramel.cli.status import print_summary
from caramel.engine.copies import apply_copies
from caramel.engine.session import dry_run, start_run
from caramel.engine.settings import Settings
from caramel.errors import RunError
from caramel.spec.limits import parse_copies, parse_duration


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run a benchmark: create its run folder and run every workpackage")
    add_benchmark_args(parser, file_optional=True)
    parser.add_argument("--suite", nargs="+", metavar="TAG", default=None,
                        help="run every benchmark with any of these tags (MAD's rule) as one campaign")
    parser.add_argument("-o", "--outpath", metavar="OUTPATH",
                        help="folder for the run folders instead of the file's outpath (relative to the current folder)")
    parser.add_argument("--dry-run", action="store_true", help="show the workpackages and their do's; create nothing")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="fail a workpackage that waits longer than this for its done file")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run every workpackage N times (N iterations of each step; tables give the mean, "
                             "the history and bench compare the spread)")
    parser.add_argument("--time-limit", metavar="SECONDS|HH:MM:SS", default=None,
                        help="time limit of every step's do's, over the file's timeout and metadata (0: none)")
    parser.add_argument("--copies", metavar="N|all", default=None,
                        help="run N copies of each workpackage at once, each on its share of cores and devices")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    parser.add_argument("--time-from-prediction", action="store_true",
                        help="on a SLURM system, a job's --time from bench predict (+ --time-margin) where the file "
                             "sets no timelimit")
    parser.add_argument("--time-margin", type=float, default=25.0, metavar="PERCENT",
                        help="added to the predicted job time's 90 %% high end (default 25)")
    add_predict_args(parser)
    parser.set_defaults(func=run)


def scheduler_for(bench) -> str:
    """The name of the run's scheduler (backends.schedulers.for_system). One the system file names
    must have its commands here (a login node), or the run does not start."""
    system = bench.system
    scheduler = schedulers.for_system(system)
    missing = scheduler.missing()
    if system is not None and system.scheduler not in schedulers.NO_SCHEDULER and missing:
        raise RunError(f"system '{system.name}' uses {scheduler.name}, but {', '.join(missing)} "
                       f"{'is' if len(missing) == 1 else 'are'} not on PATH", system.where,
                       hint="run on a login node of that system, or pick another system tag (bench run ... --tag local)")
    return scheduler.name


def repeat(bench, times: int) -> None:
    """Each step `times` as many iterations (JUBE's way of running a workpackage again)."""
    bench.steps = {name: dataclasses.replace(step, iterations=step.iterations * times, repeats=times)
                   for name, step in bench.steps.items()}


def run_options(args: argparse.Namespace) -> tuple[float | None, str | None]:
    """--time-limit in seconds and --copies, checked."""
    limit = None if args.time_limit is None else parse_duration(args.time_limit, "--time-limit")
    copies = None if args.copies is None else parse_copies(args.copies)
    return limit, copies


def run(args: argparse.Namespace) -> int:
    if args.suite:
        from caramel.cli.suite import run_suite

        return run_suite(args, run)
    if not args.file:
        raise RunError("bench run needs a benchmark file or name, or --suite TAG",
                       hint="bench run FILE --tag ..., or bench run --suite cpu-smoke --tag local")
    benchmarks = load_benchmarks(args)
    outpath = args.outpath or os.environ.get("JUBE_BENCHMARK_OUTPATH")
    if args.repeat < 1:
        raise RunError(f"--repeat {args.repeat}: expected a number of runs of at least 1")
    limit, copies = run_options(args)
    code = 0
    for bench in benchmarks:
        bench = apply_copies(bench, copies)
        if args.repeat > 1:
            repeat(bench, args.repeat)
        if args.time_from_prediction:
            bench = predicted_time(bench, args)
        if outpath:
            bench.outpath = os.path.abspath(os.path.expandvars(os.path.expanduser(outpath)))
        elif getattr(args, "by_name", False) or getattr(args, "campaign_outpath", False):  # a benchmark run by name: never beside an installed file
            bench.outpath = os.path.abspath(os.path.basename(bench.outpath))
        if args.dry_run:
            for line in dry_run(bench, max_workpackages=args.max_workpackages):
                print(line)
            continue
        summary = start_run(bench, Settings(timeout=args.timeout, time_limit=limit), quiet=args.quiet,
                            scheduler=scheduler_for(bench), on_created=getattr(args, "on_created", None),
                            max_workpackages=args.max_workpackages)
        print_summary(summary)
        code = max(code, summary.exit_code)
    return code
