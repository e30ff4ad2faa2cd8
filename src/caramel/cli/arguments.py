"""bench's argument parser: argparse's, with a did-you-mean for every name a user types wrong.

A command or a choice (`bench reslt`, `--format jsn`) gets the closest name; an unknown flag gets
the command's own usage (argparse would show bench's) and the closest flag of that command, else
the commands that take it (`bench result --format` is a flag of other commands). The guesses are
`caramel.errors.did_you_mean`'s, as every misspelt name in a benchmark file gets.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import NoReturn

from caramel.errors import did_you_mean

_CHOICE = re.compile(r"invalid choice: (?P<quote>['\"])(?P<value>.*?)(?P=quote)")


class BenchParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors about a wrong name say which name was probably meant; its
    subcommands' parsers are of this class too (argparse makes them of their parent's class)."""

    def error(self, message: str) -> NoReturn:
        found = _CHOICE.search(message)
        if found:
            hint = did_you_mean(found.group("value"), _choices(self))
            if hint:
                message = f"{message}\n  hint: {hint}"
        super().error(message)


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    """Every value the parser's arguments with choices accept (command names among them)."""
    return [
        str(choice)
        for action in parser._actions
        if action.choices is not None
        for choice in action.choices
    ]


def _subcommands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def command_parsers(
    parser: argparse.ArgumentParser, parsed: argparse.Namespace
) -> tuple[list[argparse.ArgumentParser], str]:
    """The parsers from bench's to that of the (sub)command `parsed` was parsed for, and the
    command's words (`run`, `history list`): each subcommand action's dest holds the word chosen."""
    chain: list[argparse.ArgumentParser] = [parser]
    words: list[str] = []
    while True:
        action = _subcommands(chain[-1])
        chosen = vars(parsed).get(action.dest) if action is not None else None
        if action is None or chosen not in action.choices:
            return chain, " ".join(words)
        chain.append(action.choices[chosen])
        words.append(str(chosen))


def flags_of(parser: argparse.ArgumentParser) -> list[str]:
    """The flags `--help` shows (an old spelling, hidden, is never suggested: cli.spellings)."""
    return [
        flag
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
    ]


def refuse_unknown(
    parser: argparse.ArgumentParser,
    parsed: argparse.Namespace,
    extra: list[str],
    every_command: Callable[[], argparse.ArgumentParser],
) -> NoReturn:
    """End with the command's own usage and a hint for each unknown flag of `extra` (what argparse
    left); `every_command`: a parser of all commands, made only when a flag is no near spelling."""
    chain, words = command_parsers(parser, parsed)
    flags = dict.fromkeys(word.partition("=")[0] for word in extra if word.startswith("-"))
    hints = []
    for flag in flags:
        close = _hint(flag, chain, words, every_command)
        if close:
            hints.append(f"'{flag}': {close}")
    message = f"unrecognized arguments: {' '.join(extra)}"
    chain[-1].error(message + (f"\n  hint: {'; '.join(hints)}" if hints else ""))


def _hint(
    flag: str,
    chain: list[argparse.ArgumentParser],
    words: str,
    every_command: Callable[[], argparse.ArgumentParser],
) -> str:
    """What an unknown flag may have meant: a near spelling of a flag of the command (or of
    bench's own: --debug), else the commands that take it; empty when neither."""
    close = did_you_mean(flag, [f for each in chain for f in flags_of(each)])
    if close or not words:
        return close
    takers = _commands_taking(flag, every_command())
    return f"it is a flag of {', '.join(takers)}, not of bench {words}" if takers else ""


def _commands_taking(flag: str, parser: argparse.ArgumentParser) -> list[str]:
    """`bench NAME` for every command (and subcommand) whose parser takes `flag`, each once (an
    alias shares its command's parser: the name it was added under comes first)."""
    found: list[str] = []
    seen: set[int] = set()

    def visit(each: argparse.ArgumentParser, words: list[str]) -> None:
        if words and flag in flags_of(each):
            found.append("bench " + " ".join(words))
        action = _subcommands(each)
        for name, child in action.choices.items() if action is not None else ():
            if id(child) not in seen:
                seen.add(id(child))
                visit(child, [*words, name])

    visit(parser, [])
    return found
