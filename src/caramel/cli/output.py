"""`bench output [DIR] [-i ID ...] [-s STEP ...] [-w WP ...] [-d] [-o stdout|stderr]`: the files
a run's do's wrote their standard output and error to, as JUBE's `jube output` (jube/main.py,
`output`): every do's `stdout`/`stderr` file (named by its `stdout=`/`stderr=`, else `stdout` and
`stderr`) in the work folder of each workpackage of the steps or ids chosen, each file once, sorted;
`-d` prints each file's content after its name. A file a do has not written yet is listed as JUBE
lists it; `-d` says it is missing instead of failing.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from caramel.cli.common import add_run_args, read_run
from caramel.errors import RunError

COMMAND = "output"  # `bench output` (cli/main.py finds this module by it)
STREAMS = ("stdout", "stderr")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "output", help="the stdout and stderr files of a run's workpackages (-d: their content)"
    )
    add_run_args(parser)
    parser.add_argument("-s", "--step", nargs="+", default=None, help="only these steps")
    parser.add_argument(
        "-w",
        "--workpackage",
        nargs="+",
        type=int,
        default=None,
        metavar="WP",
        help="only these workpackage ids",
    )
    parser.add_argument(
        "-d", "--display", action="store_true", help="print each file's content after its name"
    )
    parser.add_argument(
        "-o", "--only", choices=STREAMS, default=None, help="only the stdout or the stderr files"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class OutputOptions:
    dir: str | None = None
    id: str | None = None
    steps: tuple[str, ...] | None = None
    workpackages: tuple[int, ...] | None = None
    display: bool = False
    only: str | None = None  # "stdout" or "stderr"; None: both

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> OutputOptions:
        return cls(
            dir=args.dir,
            id=args.id,
            steps=tuple(args.step) if args.step else None,
            workpackages=tuple(args.workpackage) if args.workpackage else None,
            display=args.display,
            only=args.only,
        )


def run(args: argparse.Namespace) -> int:
    return output(OutputOptions.from_args(args), sys.stdout)


def output(options: OutputOptions, out: TextIO) -> int:
    with read_run(options.dir, options.id) as (run_dir, store):
        model = store.model()
        rows = _chosen(store.workpackages(), options, list(model.steps))
        paths = set()
        for wp in rows:
            paths |= _files(run_dir, model, wp, store.params(wp.id), options.only)
    for path in sorted(paths):
        out.write(path + "\n")
        if options.display:
            out.write(_content(path) + "\n")
    return 0


def _chosen(rows: list[Any], options: OutputOptions, steps: list[str]) -> list[Any]:
    """The workpackages of -w (each must exist, as JUBE requires), else of -s, else all."""
    from caramel.cli.info import known_steps

    if options.workpackages:
        return _by_id(rows, options.workpackages)
    if options.steps:
        known_steps(options.steps, steps)
        return [wp for wp in rows if wp.step in options.steps]
    return rows


def _by_id(rows: list[Any], wp_ids: tuple[int, ...]) -> list[Any]:
    """The workpackages of these ids, in their order; an error naming the ids the run lacks."""
    known = {wp.id: wp for wp in rows}
    missing = [str(wp_id) for wp_id in wp_ids if wp_id not in known]
    if missing:
        raise RunError(
            f"no workpackage {', '.join(missing)} in this run",
            hint=f"workpackage ids run from 0 to {len(rows) - 1} (bench info lists them)",
        )
    return [known[wp_id] for wp_id in wp_ids]


def _files(run_dir: str, model: Any, wp: Any, params: Any, only: str | None) -> set[str]:
    """The stdout and stderr files of every do of `wp`'s step (engine.commands names them)."""
    from caramel.stages.engine.commands import command_for
    from caramel.stages.engine.workdir import wp_paths

    step = model.steps[wp.step]
    base = wp_paths(run_dir, wp.dirname, step, params, model.home).base
    found = set()
    for op, do in enumerate(step.dos):
        command = command_for(do, op, 0, params, base)
        found |= {
            path
            for stream, path in zip(STREAMS, (command.stdout, command.stderr), strict=True)
            if only in (None, stream)
        }
    return found


def _content(path: str) -> str:
    try:
        with open(path, errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        return f"({exc.strerror or exc}: not written)"
