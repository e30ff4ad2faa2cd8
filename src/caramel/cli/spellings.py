"""Old spellings of flags, kept so that scripts and habits keep working.

One vocabulary holds across commands (`--tag`, `--format`, `-o FILE` for a file written,
`--outpath DIR` for run folders, `--wait-limit` for a done file's wait, `--time-limit` for a
do's run time); a flag's former name stays accepted, hidden from `--help`, and each use prints a
one-line note naming the new one (docs/cli.md, "One vocabulary").
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any


def add_old_spelling(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept `old` as `new` (a flag `parser` already has): same value, same place in the
    namespace, left out of `--help`, with a note on stderr whenever it is used."""
    target = parser._option_string_actions[new]
    alias = copy.copy(target)
    alias.option_strings = [old]
    alias.help = argparse.SUPPRESS
    alias.required = False  # the new spelling's `required` is checked on the new one's action
    alias.__class__ = _noting(type(target), new)
    parser._add_action(alias)
    if target.required:
        # argparse checks `required` per action: either spelling must do
        target.required = False
        parser.set_defaults(**{_REQUIRED_MARK + target.dest: "/".join(target.option_strings)})


_REQUIRED_MARK = "_required_one_of_"


def check_required(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The error argparse would give for a required flag that has an old spelling too and got
    neither (add_old_spelling lifts argparse's own check, which knows only one spelling)."""
    given = vars(args)
    for key, flag in list(given.items()):
        if key.startswith(_REQUIRED_MARK):
            delattr(args, key)
            if given.get(key[len(_REQUIRED_MARK) :]) is None:
                parser.error(f"the following arguments are required: {flag}")


def _noting(action_class: type[argparse.Action], new: str) -> type[argparse.Action]:
    """`action_class` that first prints which spelling replaced the one typed."""

    class Renamed(action_class):  # type: ignore[valid-type, misc]
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: Any,
            option_string: str | None = None,
        ) -> None:
            print(
                f"note: {option_string} is spelt {new} in bench (this spelling still works)",
                file=sys.stderr,
            )
            super().__call__(parser, namespace, values, option_string)

    return Renamed
