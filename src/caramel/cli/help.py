"""`bench help [COMMAND ...]`: a command's `--help`, as JUBE's `jube help COMMAND` (jube/main.py,
`command_help`); without a command, bench's own. JUBE's help also explains its file's elements
(`jube help parameterset`): caramel's are in docs/file-format.md, so an unknown word is an error
with a did-you-mean, where JUBE prints "no help found"."""

from __future__ import annotations

import argparse
import sys

from caramel.errors import RunError, did_you_mean

COMMAND = "help"  # `bench help` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("help", help="the help of a command (bench help result)")
    parser.add_argument(
        "words", nargs="*", metavar="COMMAND", help="a command, and a subcommand (history list)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from caramel.cli.main import build_parser  # every command's parser (bench help lists them)

    show(build_parser(), list(args.words))
    return 0


def show(parser: argparse.ArgumentParser, words: list[str]) -> None:
    """The help of the (sub)command `words` names on stdout; a word no command has is an error."""
    for depth, word in enumerate(words):
        action = next(
            (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
            None,
        )
        choices = dict(action.choices) if action is not None else {}
        if word not in choices:
            said = " ".join(["bench", *words[:depth]])
            raise RunError(
                f"{said} has no command '{word}'",
                hint=did_you_mean(word, choices)
                or ("commands: " + ", ".join(sorted(choices)) if choices else f"{said} --help")
                + "; the file format: docs/file-format.md",
            )
        parser = choices[word]
    parser.print_help(sys.stdout)
