"""`bench info [DIR] [-i ID ...] [-w WP] [-s STEP ...]`: a run's settings, parameters and
workpackages."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import add_run_reader, read_run
from caramel.cli.tables import table_lines
from caramel.errors import RunError, did_you_mean

if TYPE_CHECKING:
    from caramel.stages.expand.params import Params
    from caramel.stages.state.rows import WpRow
    from caramel.stages.state.store import Store


COMMAND = "info"  # `bench info` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_run_reader(
        sub, "info", "a run's benchmark, settings, parameters and workpackages", ("text", "json")
    )
    parser.add_argument(
        "-w", "--workpackage", type=int, metavar="WP", help="every parameter of one workpackage"
    )
    parser.add_argument(
        "-s",
        "--step",
        nargs="+",
        default=None,
        metavar="STEP",
        help="only these steps' parameters and workpackages (JUBE's -s)",
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class InfoOptions:
    dir: str | None = None
    id: str | None = None
    workpackage: int | None = None  # -w: every parameter of this one
    json: bool = False
    steps: tuple[str, ...] | None = None  # -s: only these steps' sections (text)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> InfoOptions:
        return cls(
            dir=args.dir,
            id=args.id,
            workpackage=args.workpackage,
            json=args.format == "json",
            steps=tuple(args.step) if args.step else None,
        )


def run(args: argparse.Namespace) -> int:
    return info_command(InfoOptions.from_args(args), sys.stdout)


def info_command(options: InfoOptions, out: TextIO) -> int:
    """`bench info`: the run's facts, then each step's fixed parameters and a row per
    workpackage."""
    with read_run(options.dir, options.id) as (run_dir, store):
        info = store.info()
        rows = store.workpackages()
        if options.workpackage is not None:
            return _one(store, run_dir, rows, options.workpackage, options.json, out)
        params = store.all_params()
        note = store.model().comment  # bench comment, bench run -m
    varying: dict[str, list[str]] = {}
    firsts: dict[str, dict[str, str]] = {}
    for wp in rows:
        names = varying.setdefault(wp.step, [])
        first = firsts.setdefault(wp.step, params[wp.id])
        changed = {
            n for n, _ in params[wp.id].items() - first.items() if not n.startswith("jube_")
        }  # C speed
        if not changed.issubset(
            names
        ):  # new ones, in this workpackage's order (as they were always listed)
            names += [n for n in params[wp.id] if n in changed and n not in names]
    if options.json:
        out.write(
            json.dumps(
                {
                    "run": info.run_id,
                    "benchmark": info.benchmark,
                    "file": info.file,
                    "dir": run_dir,
                    "tags": info.tags,
                    "created": info.created,
                    "cwd": info.cwd,
                    "settings": info.settings,
                    "comment": note,
                    "workpackages": [
                        {
                            "id": wp.id,
                            "step": wp.step,
                            "iteration": wp.iteration,
                            "parents": list(wp.parents),
                            "state": wp.state,
                            "parameters": {
                                k: v for k, v in params[wp.id].items() if not k.startswith("jube_")
                            },
                        }
                        for wp in rows
                    ],
                }
            )
            + "\n"
        )
        return 0
    lines = [
        f"run        {info.run_id:06d}",
        f"benchmark  {info.benchmark}",
        f"file       {info.file}",
        f"dir        {run_dir}",
        f"tags       {', '.join(info.tags) or '-'}",
        f"created    {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info.created))} "
        f"(from {info.cwd})",
        "settings   "
        f"{', '.join(f'{k}={v}' for k, v in info.settings.items() if v is not None) or '-'}",
    ]
    if note:
        lines.append(f"comment    {note}")
    steps = list(dict.fromkeys(wp.step for wp in rows))
    if options.steps:  # JUBE's info -s: those steps only, without the run's facts
        lines = []
        steps = _known_steps(options.steps, steps)
    for step in steps:
        lines += _step_lines(step, [wp for wp in rows if wp.step == step], varying[step], params)
    out.write("\n".join(lines) + "\n")  # one write: 10,000 print calls cost more than the table
    return 0


def _step_lines(
    step: str, group: list[WpRow], names: list[str], params: dict[int, Params]
) -> list[str]:
    """A step's fixed parameters, then one aligned row per workpackage with the varying ones."""
    fixed = {
        k: v for k, v in params[group[0].id].items() if not k.startswith("jube_") and k not in names
    }
    lines = ["", f"step {step}: {len(group)} workpackages"] + [
        f"  {k} = {_short(v)}" for k, v in fixed.items()
    ]
    header = ["id", "iter", "parents", "state"] + names
    table = [
        [str(wp.id), str(wp.iteration), ",".join(map(str, wp.parents)) or "-", wp.state]
        + [_short(params[wp.id].get(n, "")) for n in names]
        for wp in group
    ]
    return lines + table_lines(header, table, indent=2)


def _known_steps(wanted: tuple[str, ...], steps: list[str]) -> list[str]:
    unknown = [step for step in wanted if step not in steps]
    if unknown:
        raise RunError(
            f"no step '{unknown[0]}' in this run",
            hint=did_you_mean(unknown[0], steps) or f"steps: {', '.join(steps)}",
        )
    return list(dict.fromkeys(wanted))


def _short(value: str, width: int = 40) -> str:
    value = " ".join(value.split())
    return value if len(value) <= width else value[: width - 3] + "..."


def _one(
    store: Store, run_dir: str, rows: list[WpRow], wp_id: int, as_json: bool, out: TextIO
) -> int:
    wp = next((w for w in rows if w.id == wp_id), None)
    if wp is None:
        raise RunError(f"run {run_dir} has no workpackage {wp_id}")
    params = store.params(wp_id)
    if as_json:
        out.write(
            json.dumps(
                {
                    "id": wp.id,
                    "step": wp.step,
                    "iteration": wp.iteration,
                    "parents": list(wp.parents),
                    "state": wp.state,
                    "reason": wp.reason,
                    "exit_code": wp.exit_code,
                    "attempt": wp.attempt,
                    "dir": f"{run_dir}/{wp.dirname}",
                    "parameters": params,
                }
            )
            + "\n"
        )
        return 0
    out.write(
        f"workpackage {wp.id} of step {wp.step} (iteration {wp.iteration}, parents "
        f"{','.join(map(str, wp.parents)) or '-'})\nstate  {wp.state}"
        + (f": {wp.reason}" if wp.reason else "")
        + f"\ndir    {run_dir}/{wp.dirname}\nparameters:\n"
    )
    width = max((len(n) for n in params), default=0)
    out.writelines(
        f"  {name.ljust(width)} = {value.rstrip()}\n" for name, value in sorted(params.items())
    )
    return 0
