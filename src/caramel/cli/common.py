"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse


def add_benchmark_args(parser: argparse.ArgumentParser) -> None:
    """FILE, --tag and --include-path, as `jube run` takes them."""
    parser.add_argument("file", metavar="FILE", help="benchmark file (JUBE XML or YAML)")
    parser.add_argument("--tag", "-t", nargs="+", action="extend", default=[], metavar="TAG",
                        help="tags selecting parameters, steps and the system")
    parser.add_argument("--include-path", action="append", default=[], metavar="DIR",
                        help="folder searched for init_with/use from= files (repeatable)")
    parser.add_argument("--only-bench", action="append", default=[], metavar="NAME",
                        help="only the benchmark of this name (a file may hold several)")
