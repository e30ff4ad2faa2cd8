"""`bench system list|show|check|detect`: the system files, and what this machine says about
them."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from caramel.adapters import (
    systems,  # its loader (YAML) only when a command reads a system: not for `bench --help`
)
from caramel.adapters.systems.stack import NEEDS
from caramel.cli.tables import CELL_WIDTH, clip, print_table
from caramel.errors import CaramelError, did_you_mean

COMMAND = "system"  # `bench system` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "system", help="system files: list, show, check on this machine, detect a draft"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for name, helptext in (
        ("list", "the shipped and site systems, and where each comes from"),
        ("show", "a system file as it is read"),
        ("check", "whether a system holds on this machine (exit 1 if anything fails)"),
        ("detect", "write a draft system file from what this machine says (SLURM)"),
    ):
        action = actions.add_parser(name, help=helptext)
        action.add_argument(
            "--systems",
            action="append",
            default=[],
            metavar="DIR",
            help="folder of system files searched before $CARAMEL_SYSTEMS_PATH and caramel's",
        )
        if name in ("show", "check"):
            action.add_argument("name", metavar="NAME")
        if name == "list":
            action.add_argument("--format", choices=["table", "json"], default="table")
        if name == "detect":
            action.add_argument(
                "--partition",
                metavar="P",
                help="the partition to describe (default: SLURM's default)",
            )
            action.add_argument(
                "--backend",
                choices=sorted(NEEDS),
                help="say which of the driver, CUDA, cuDNN, TensorRT and ROCm it needs are missing",
            )
            action.add_argument(
                "-o",
                "--output",
                required=True,
                metavar="FILE",
                help="the file to write (its stem is the system's tag); never overwritten",
            )
        action.set_defaults(func=run)


@dataclass(frozen=True)
class SystemOptions:
    action: str  # list, show, check or detect
    systems: tuple[str, ...] = ()  # folders searched before $CARAMEL_SYSTEMS_PATH and caramel's
    name: str | None = None  # show, check
    json: bool = False  # list --format json
    partition: str | None = None  # detect
    output: str | None = None  # detect
    backend: str | None = None  # detect: the inference backend whose stack to check

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SystemOptions:
        action, extra = args.action, tuple(args.systems)
        if action == "list":
            return cls(action, extra, json=args.format == "json")
        if action == "detect":
            return cls(
                action, extra, partition=args.partition, output=args.output, backend=args.backend
            )
        return cls(action, extra, name=args.name)


def run(args: argparse.Namespace) -> int:
    return system_command(SystemOptions.from_args(args), sys.stdout)


def system_command(options: SystemOptions, out: TextIO) -> int:
    """`bench system list|show|check|detect`."""
    actions = {
        "list": system_list,
        "show": system_show,
        "check": system_check,
        "detect": system_detect,
    }
    return actions[options.action](options, out)


def _path_of(name: str, extra: list[str]) -> Path:
    for folder in systems.search_path(extra):
        if (folder / f"{name}.yaml").is_file():
            return folder / f"{name}.yaml"
    names = systems.system_names(extra)
    raise CaramelError(
        f"no system named '{name}'",
        hint=did_you_mean(name, names) or "systems: " + ", ".join(names),
    )


def system_list(options: SystemOptions, out: TextIO) -> int:
    from caramel.adapters.systems.loader import SHIPPED

    rows = []
    extra = list(options.systems)
    for name in systems.system_names(extra):
        path = _path_of(name, extra)
        origin = "shipped" if path.parent.resolve() == SHIPPED.resolve() else str(path.parent)
        try:
            system = systems.load_system(path)
            rows.append(
                {
                    "name": name,
                    "scheduler": system.scheduler,
                    "description": system.description,
                    "origin": origin,
                    "file": str(path),
                }
            )
        except CaramelError as exc:
            rows.append(
                {
                    "name": name,
                    "scheduler": "?",
                    "description": f"cannot read: {exc.message}",
                    "origin": origin,
                    "file": str(path),
                }
            )
    if options.json:
        out.write(json.dumps(rows, indent=1) + "\n")
        return 0
    header = ["name", "scheduler", "description", "origin"]
    print_table(out, header, [[clip(r[h], CELL_WIDTH) for h in header] for r in rows])
    return 0


def system_show(options: SystemOptions, out: TextIO) -> int:
    assert options.name is not None
    path = _path_of(options.name, list(options.systems))
    system = systems.load_system(path)
    out.write(f"# {path}\n")
    for key, value in system.parameters().items():
        out.write(f"{key}: {value}\n")
    return 0


def system_check(options: SystemOptions, out: TextIO) -> int:
    from caramel.adapters.systems.probe import check
    from caramel.payloads.measure import load_method

    assert options.name is not None
    path = _path_of(options.name, list(options.systems))
    findings = check(systems.load_system(path), load_method)
    out.write(f"system {options.name} ({path}):\n")
    for f in findings:
        out.write(f"  {'ok  ' if f.ok else 'FAIL'}  {f.what}: {f.detail}\n")
    failed = sum(not f.ok for f in findings)
    if not findings:
        out.write("nothing to check: the file names no command, module, folder or method\n")
    else:
        out.write(
            f"{len(findings) - failed} of {len(findings)} checks hold"
            + (f", {failed} failed" if failed else "")
            + "\n"
        )
    return 1 if failed else 0


def system_detect(options: SystemOptions, stdout: TextIO) -> int:
    from caramel.adapters.systems.probe import detect

    assert options.output is not None
    out = Path(options.output)
    if out.exists():
        raise CaramelError(
            f"{out} exists; bench system detect does not overwrite a file",
            hint="give another -o FILE, or remove it first",
        )
    if out.suffix != ".yaml":
        raise CaramelError(
            f"{out}: a system file ends in .yaml (its stem is the tag that selects it)"
        )
    # the folder as the user named it (`.` for a file here): the printed commands paste as they are
    folder = os.path.relpath(out.parent) if not out.is_absolute() else str(out.parent)
    text = detect(out.stem, options.partition, folder, options.backend)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text)
    try:
        systems.load_system(tmp.rename(out))  # the draft must read as a system file
    except CaramelError:
        out.unlink()
        raise
    stdout.write(text)
    stdout.write(
        f"# written to {out}; check it: bench system check {out.stem} --systems "
        f"{shlex.quote(folder)}"
        f"; use it: bench run BENCHMARK --systems {shlex.quote(folder)} --tag {out.stem}\n"
    )
    return 0
