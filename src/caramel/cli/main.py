"""`bench` entry point: builds the argument parser from the subcommand modules and runs one."""

from __future__ import annotations

import argparse
import importlib
import sys

from caramel import __version__
from caramel.errors import CaramelError

# Each subcommand lives in caramel.cli.<module> with `register(subparsers)` and `run(args) -> int`.
COMMANDS = ["plan", "run", "continue_cmd", "status", "log", "info", "remove", "cancel", "result", "analyse",
            "compare", "baseline", "report", "export", "container", "predict"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description="caramel: JUBE-compatible benchmarks for ML on HPC")
    parser.add_argument("--version", action="version", version=f"caramel {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"caramel.cli.{name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CaramelError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug in caramel: say so plainly, keep the traceback for --debug
        if args.debug:
            raise
        print(f"internal error: {type(exc).__name__}: {exc}\n  hint: this is a bug in caramel; rerun with "
              "--debug and report the traceback", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
