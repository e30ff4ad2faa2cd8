"""`bench run FILE`: expand the benchmark, create its run folder and run its workpackages."""

from __future__ import annotations

import argparse
import os

from caramel.cli.common import add_benchmark_args
from caramel.cli.status import print_summary
from caramel.engine.scheduler import Settings
from caramel.engine.session import dry_run, start_run
from caramel.spec.loader import load


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run a benchmark: create its run folder and run every workpackage")
    add_benchmark_args(parser)
    parser.add_argument("-o", "--outpath", metavar="OUTPATH",
                        help="folder for the run folders instead of the file's outpath (relative to the current folder)")
    parser.add_argument("--dry-run", action="store_true", help="show the workpackages and their do's; create nothing")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="fail a workpackage that waits longer than this for its done file")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    benchmarks = load(args.file, set(args.tag), args.include_path, only=args.only_bench or None)
    outpath = args.outpath or os.environ.get("JUBE_BENCHMARK_OUTPATH")
    code = 0
    for bench in benchmarks:
        if outpath:
            bench.outpath = os.path.abspath(os.path.expandvars(os.path.expanduser(outpath)))
        if args.dry_run:
            for line in dry_run(bench):
                print(line)
            continue
        summary = start_run(bench, Settings(timeout=args.timeout), quiet=args.quiet)
        print_summary(summary)
        code = max(code, summary.exit_code)
    return code
