"""`bench import FILE`: add runs exported by `bench export` to the history (cli/export.py does
the work)."""

from __future__ import annotations

import argparse
import sys

from caramel.cli.export import ImportOptions, import_command

COMMAND = "import"  # `bench import` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    into = sub.add_parser("import", help="add runs exported by bench export to the history")
    into.add_argument("file", metavar="FILE")
    into.add_argument(
        "--history",
        metavar="FILE|URL",
        help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)",
    )
    into.set_defaults(func=lambda args: import_command(ImportOptions.from_args(args), sys.stdout))
