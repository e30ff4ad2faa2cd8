"""`bench list [--tag T ...] [DIR ...]`: the benchmarks on offer, selected by tags
(cli/benchmarks.py lists them)."""

from __future__ import annotations

import argparse
import sys

from caramel.cli.benchmarks import ListOptions, list_benchmarks
from caramel.cli.spellings import add_old_spelling

COMMAND = "list"  # `bench list` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "list", help="list benchmarks, selected by tags (any tag matches; a name is a tag)"
    )
    parser.add_argument(
        "dirs", nargs="*", metavar="DIR", help="folders of benchmark files searched first"
    )
    parser.add_argument(
        "--tag",
        "-t",
        dest="tags",
        nargs="+",
        action="extend",
        default=[],
        metavar="TAG",
        help="only benchmarks with any of these tags (a benchmark's name is one of its tags)",
    )
    add_old_spelling(parser, "--tags", "--tag")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(
        func=lambda args: list_benchmarks(ListOptions.from_list_args(args), sys.stdout)
    )
