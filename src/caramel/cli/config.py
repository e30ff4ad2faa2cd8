"""`bench config [--json]`: every setting (caramel.settings), its value and where the value came
from."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from caramel import redact
from caramel.cli.tables import print_table
from caramel.settings import BY_NAME, current


@dataclass(frozen=True)
class ConfigOptions:
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConfigOptions:
        return cls(json=args.json)


COMMAND = "config"  # `bench config` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("config", help="show every setting, its value and where it came from")
    parser.add_argument("--json", action="store_true", help="one JSON object per setting")
    parser.set_defaults(func=lambda args: config(ConfigOptions.from_args(args), sys.stdout))


def config(options: ConfigOptions, out: TextIO) -> int:
    """The settings the command started with: name, environment variable, value (its credentials
    masked: caramel.redact), source."""
    settings = current()
    names = [name for name in BY_NAME]
    if options.json:
        out.write(
            json.dumps(
                [
                    {
                        "name": name,
                        "env": BY_NAME[name].env,
                        "value": redact.text(settings.text(name)),
                        "source": settings.origin[name].value,
                        "default": BY_NAME[name].default,
                        "doc": BY_NAME[name].doc,
                    }
                    for name in names
                ],
                indent=1,
            )
            + "\n"
        )
        return 0
    rows = [
        [
            name,
            BY_NAME[name].env,
            redact.text(settings.text(name)) or "-",
            settings.origin[name].value,
        ]
        for name in names
    ]
    print_table(out, ["setting", "variable", "value", "source"], rows)
    out.write(
        f"settings file: {settings.settings_file}"
        f"{'' if os.path.isfile(settings.settings_file) else ' (none)'}\n"
    )
    return 0
