"""The flags JUBE's `run` and `continue` take that caramel answers in its own way (jube/main.py,
`gen_subparser_conf`): `-a` analyse and `-r` show the results once the run stops, `-e` exit on
error (the engine's Settings.stop_after_failure), `--hide-animation` (caramel's `-q`); `bench run`
adds `-m` (the run's comment) and `--not-bench` itself (docs/coming-from-jube.md)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TextIO

from caramel.cli.spellings import add_old_spelling


def add_after_args(parser: argparse.ArgumentParser) -> None:
    """-a, -r, -e and --hide-animation (the parser has -q already)."""
    parser.add_argument(
        "-a", "--analyse", action="store_true", help="analyse the run when it stops (JUBE's -a)"
    )
    parser.add_argument(
        "-r",
        "--result",
        action="store_true",
        help="print the run's result tables when it stops (JUBE's -r)",
    )
    parser.add_argument(
        "-e",
        "--exit-on-error",
        action="store_true",
        help="start no further workpackage once one failed; the running ones finish (JUBE's -e)",
    )
    add_old_spelling(parser, "--hide-animation", "--quiet")


@dataclass(frozen=True)
class AfterRun:
    """What runs once the run stops: JUBE's -a and -r."""

    analyse: bool = False
    result: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AfterRun:
        return cls(analyse=args.analyse, result=args.result)

    def __call__(self, run_dir: str, out: TextIO) -> int:
        """-r: `bench result` of the run (it analyses first); -a alone: `bench analyse`."""
        if self.result:
            from caramel.cli.result import ResultOptions, result

            return result(ResultOptions(dir=run_dir), out)
        if self.analyse:
            from caramel.cli.analyse import AnalyseOptions, analyse

            return analyse(AnalyseOptions(dir=run_dir), out)
        return 0
