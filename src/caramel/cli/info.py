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
    from caramel.stages.state.rows import RunInfo, WpRow
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
        run = _RunView(info, run_dir, rows, store.all_params(), store.model().comment)
    if options.json:
        out.write(json.dumps(run.as_json()) + "\n")
        return 0
    # one write: 10,000 print calls cost more than the table
    out.write("\n".join(run.text_lines(options.steps)) + "\n")
    return 0


@dataclass
class _RunView:
    """What `bench info` shows of a run: its facts, workpackages and their parameters, and its
    comment (bench comment, bench run -m)."""

    info: RunInfo
    run_dir: str
    rows: list[WpRow]
    params: dict[int, Params]
    note: str

    def as_json(self) -> dict[str, object]:
        info = self.info
        return {
            "run": info.run_id,
            "benchmark": info.benchmark,
            "file": info.file,
            "dir": self.run_dir,
            "tags": info.tags,
            "created": info.created,
            "cwd": info.cwd,
            "settings": info.settings,
            "comment": self.note,
            "workpackages": [self._wp_json(wp) for wp in self.rows],
        }

    def _wp_json(self, wp: WpRow) -> dict[str, object]:
        return {
            "id": wp.id,
            "step": wp.step,
            "iteration": wp.iteration,
            "parents": list(wp.parents),
            "state": wp.state,
            "parameters": _without_jube(self.params[wp.id]),
        }

    def text_lines(self, only: tuple[str, ...] | None) -> list[str]:
        """The run's facts and every step's section; with `only` (JUBE's info -s), those steps'
        sections alone."""
        steps = list(dict.fromkeys(wp.step for wp in self.rows))
        if only:
            return self._step_sections(known_steps(only, steps))
        return self._facts() + self._step_sections(steps)

    def _step_sections(self, steps: list[str]) -> list[str]:
        varying = _varying(self.rows, self.params)
        lines: list[str] = []
        for step in steps:
            group = [wp for wp in self.rows if wp.step == step]
            lines += _step_lines(step, group, varying[step], self.params)
        return lines

    def _facts(self) -> list[str]:
        info = self.info
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.created))
        settings = ", ".join(f"{k}={v}" for k, v in info.settings.items() if v is not None)
        lines = [
            f"run        {info.run_id:06d}",
            f"benchmark  {info.benchmark}",
            f"file       {info.file}",
            f"dir        {self.run_dir}",
            f"tags       {', '.join(info.tags) or '-'}",
            f"created    {created} (from {info.cwd})",
            f"settings   {settings or '-'}",
        ]
        return lines + [f"comment    {self.note}"] * bool(self.note)


def _without_jube(params: Params) -> dict[str, str]:
    """The parameters caramel and JUBE do not set themselves (no jube_ ones)."""
    return {k: v for k, v in params.items() if not k.startswith("jube_")}


def _varying(rows: list[WpRow], params: dict[int, Params]) -> dict[str, list[str]]:
    """Each step's parameters (jube_ ones aside) whose value differs from the step's first
    workpackage's, in the order the workpackages first show them."""
    varying: dict[str, list[str]] = {}
    firsts: dict[str, Params] = {}
    for wp in rows:
        names = varying.setdefault(wp.step, [])
        first = firsts.setdefault(wp.step, params[wp.id])
        changed = _changed(params[wp.id], first)
        if not changed.issubset(names):  # new ones, in this workpackage's order
            new = changed.difference(names)
            names += [n for n in params[wp.id] if n in new]
    return varying


def _changed(params: Params, first: Params) -> set[str]:
    """The parameters (jube_ ones aside) whose value differs from `first`'s."""
    # a set difference of the items: C speed over 10,000 workpackages
    return {n for n, _ in params.items() - first.items() if not n.startswith("jube_")}


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


def known_steps(wanted: tuple[str, ...], steps: list[str]) -> list[str]:
    """The steps -s names, each once; an error naming the first that is not one of `steps`."""
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
    """`bench info -w WP`: every parameter of one workpackage, with its state and folder."""
    wp = next((w for w in rows if w.id == wp_id), None)
    if wp is None:
        raise RunError(f"run {run_dir} has no workpackage {wp_id}")
    write = _write_one_json if as_json else _write_one_text
    write(wp, run_dir, store.params(wp_id), out)
    return 0


def _write_one_json(wp: WpRow, run_dir: str, params: Params, out: TextIO) -> None:
    one = {
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
    out.write(json.dumps(one) + "\n")


def _write_one_text(wp: WpRow, run_dir: str, params: Params, out: TextIO) -> None:
    reason = f": {wp.reason}" if wp.reason else ""
    out.write(
        f"workpackage {wp.id} of step {wp.step} (iteration {wp.iteration}, parents "
        f"{','.join(map(str, wp.parents)) or '-'})\nstate  {wp.state}{reason}"
        f"\ndir    {run_dir}/{wp.dirname}\nparameters:\n"
    )
    width = max((len(n) for n in params), default=0)
    out.writelines(
        f"  {name.ljust(width)} = {value.rstrip()}\n" for name, value in sorted(params.items())
    )
