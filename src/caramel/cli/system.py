"""`bench system list|show|check|detect`: the system files, and what this machine says about them."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from caramel import systems  # its loader (YAML) only when a command reads a system: not for `bench --help`
from caramel.cli.tables import print_table
from caramel.errors import CaramelError, did_you_mean


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("system", help="system files: list, show, check on this machine, detect a draft")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for name, helptext in (("list", "the shipped and site systems, and where each comes from"),
                           ("show", "a system file as it is read"),
                           ("check", "whether a system holds on this machine (exit 1 if anything fails)"),
                           ("detect", "write a draft system file from what this machine says (SLURM)")):
        action = actions.add_parser(name, help=helptext)
        action.add_argument("--systems", action="append", default=[], metavar="DIR",
                            help="folder of system files searched before $CARAMEL_SYSTEMS_PATH and caramel's")
        if name in ("show", "check"):
            action.add_argument("name", metavar="NAME")
        if name == "list":
            action.add_argument("--format", choices=["table", "json"], default="table")
        if name == "detect":
            action.add_argument("--partition", metavar="P", help="the partition to describe (default: SLURM's default)")
            action.add_argument("-o", "--output", required=True, metavar="FILE",
                                help="the file to write (its stem is the system's tag); never overwritten")
        action.set_defaults(func=globals()[f"run_{name}"])


def _path_of(name: str, extra: list[str]) -> Path:
    for folder in systems.search_path(extra):
        if (folder / f"{name}.yaml").is_file():
            return folder / f"{name}.yaml"
    names = systems.system_names(extra)
    raise CaramelError(f"no system named '{name}'",
                       hint=did_you_mean(name, names) or "systems: " + ", ".join(names))


def run_list(args: argparse.Namespace) -> int:
    from caramel.systems.loader import SHIPPED

    rows = []
    for name in systems.system_names(args.systems):
        path = _path_of(name, args.systems)
        origin = "shipped" if path.parent.resolve() == SHIPPED.resolve() else str(path.parent)
        try:
            system = systems.load_system(path)
            rows.append({"name": name, "scheduler": system.scheduler, "description": system.description,
                         "origin": origin, "file": str(path)})
        except CaramelError as exc:
            rows.append({"name": name, "scheduler": "?", "description": f"cannot read: {exc.message}",
                         "origin": origin, "file": str(path)})
    if args.format == "json":
        print(json.dumps(rows, indent=1))
        return 0
    header = ["name", "scheduler", "description", "origin"]
    print_table(sys.stdout, header, [[r[h][:60] for h in header] for r in rows])
    return 0


def run_show(args: argparse.Namespace) -> int:
    path = _path_of(args.name, args.systems)
    system = systems.load_system(path)
    print(f"# {path}")
    for key, value in system.parameters().items():
        print(f"{key}: {value}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from caramel.energy.measure import load_method
    from caramel.systems.probe import check

    path = _path_of(args.name, args.systems)
    findings = check(systems.load_system(path), load_method)
    print(f"system {args.name} ({path}):")
    for f in findings:
        print(f"  {'ok  ' if f.ok else 'FAIL'}  {f.what}: {f.detail}")
    failed = sum(not f.ok for f in findings)
    print(f"{len(findings) - failed} of {len(findings)} checks hold" + (f", {failed} failed" if failed else ""))
    return 1 if failed else 0


def run_detect(args: argparse.Namespace) -> int:
    from caramel.systems.probe import detect

    out = Path(args.output)
    if out.exists():
        raise CaramelError(f"{out} exists; bench system detect does not overwrite a file",
                           hint="give another -o FILE, or remove it first")
    if out.suffix != ".yaml":
        raise CaramelError(f"{out}: a system file ends in .yaml (its stem is the tag that selects it)")
    text = detect(out.stem, args.partition)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text)
    try:
        systems.load_system(tmp.rename(out))  # the draft must read as a system file
    except CaramelError:
        out.unlink()
        raise
    print(text, end="")
    print(f"# written to {out}; use it with --systems {os.path.dirname(os.path.abspath(out))} --tag {out.stem}")
    return 0
