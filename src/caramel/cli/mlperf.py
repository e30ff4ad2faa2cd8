"""`bench mlperf submit|check`: caramel runs as MLCommons' submission tree (docs/mlperf.md).

bench mlperf submit -i ID [ID ...] | -c ID|last --submitter ORG --division open -o DIR
    [--system NAME] [--push URL [--branch NAME]] [--history FILE | --no-history]
bench mlperf check DIR
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from caramel.errors import RunError

if TYPE_CHECKING:
    from caramel.consumers.mlperf.check import Problem
    from caramel.consumers.mlperf.tree import Destination, Gathered

COMMAND = "mlperf"  # `bench mlperf` (cli/main.py finds this module by it)
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # one folder name of the tree


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("mlperf", help="MLPerf submission tree of runs; check one")
    actions = parser.add_subparsers(dest="action", required=True, metavar="submit|check")
    submit = actions.add_parser("submit", help="write (and push) the submission tree of runs")
    submit.add_argument("dir", nargs="?", metavar="DIR", help="run folder, or the outpath")
    chosen = submit.add_mutually_exclusive_group()
    chosen.add_argument("-i", "--id", nargs="+", metavar="ID|last", help="runs (default: last)")
    chosen.add_argument(
        "-c",
        dest="campaign_id",
        metavar="ID|last",
        help="every run of a campaign (bench run --suite)",
    )
    submit.add_argument("--submitter", required=True, metavar="NAME", help="your organisation")
    submit.add_argument("--division", required=True, choices=("closed", "open"))
    submit.add_argument("-o", "--output", required=True, metavar="DIR", help="the tree's root")
    submit.add_argument(
        "--system", metavar="NAME", help="the system description's name (default: the site)"
    )
    submit.add_argument("--push", metavar="URL", help="commit the tree to this git repository")
    submit.add_argument("--branch", default="main", help="the branch --push commits on (main)")
    submit.add_argument("--history", metavar="FILE", help="history to add the runs to")
    submit.add_argument("--no-history", action="store_true", help="add no run to the history")
    check = actions.add_parser("check", help="check a submission tree as the checker does")
    check.add_argument("tree", metavar="DIR")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class SubmitOptions:
    submitter: str
    division: str
    output: str
    dir: str | None = None
    ids: tuple[str, ...] = ()
    campaign: str | None = None
    system: str | None = None
    push: str | None = None
    branch: str = "main"
    history: str | None = None
    no_history: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SubmitOptions:
        return cls(
            submitter=args.submitter,
            division=args.division,
            output=args.output,
            dir=args.dir,
            ids=tuple(args.id or ()),
            campaign=args.campaign_id,
            system=args.system,
            push=args.push,
            branch=args.branch,
            history=args.history,
            no_history=args.no_history,
        )


def run(args: argparse.Namespace) -> int:
    if args.action == "check":
        return check(Path(args.tree), sys.stdout)
    return submit(SubmitOptions.from_args(args), sys.stdout)


def check(tree: Path, out: TextIO) -> int:
    from caramel.consumers.mlperf.check import check_tree

    if not tree.is_dir():
        raise RunError(f"{tree}: no such folder", hint="give the root of a submission tree")
    problems = check_tree(tree)
    for problem in problems:
        out.write(f"{problem}\n")
    out.write(f"{tree}: {len(problems)} problem(s)\n" if problems else f"{tree}: no problem\n")
    return 1 if problems else 0


def runs_of(options: SubmitOptions) -> list[str]:
    """The run folders: the campaign's, else each -i ID's (default: the last run)."""
    from caramel.stages.state.registry import resolve

    if options.campaign:
        from caramel.stages.state.campaigns import resolve_campaign

        return resolve_campaign(options.campaign)[1]
    return [resolve(options.dir, run_id) for run_id in (options.ids or ("last",))]


def checked_name(value: str, what: str) -> str:
    if not SAFE_NAME.match(value):
        raise RunError(
            f"{what} {value!r}: one folder name expected (letters, digits, '.', '_', '-')"
        )
    return value


def submit(options: SubmitOptions, out: TextIO) -> int:
    """Gather the runs' MLPerf outputs, write the tree, check it, record the runs, push."""
    from caramel.consumers.mlperf.check import check_tree
    from caramel.consumers.mlperf.tree import write_tree

    runs = runs_of(options)
    gathered = _gathered(runs)
    fingerprint, site = run_fingerprint(runs[-1])
    where = _destination(options, site)
    description = system_description(fingerprint, where)
    written = write_tree(gathered, where, description)
    out.write(f"{where.base}: {len(written)} file(s) for {len(runs)} run(s)\n")
    if not options.no_history:
        record_runs(runs, options.history)
    if _print_problems(check_tree(Path(options.output)), bool(options.push), out):
        return 1
    if options.push:
        push(options, where, len(runs), out)
    return 0


def _gathered(runs: list[str]) -> Gathered:
    """The runs' LoadGen outputs and training logs; an error when they hold none."""
    from caramel.consumers.mlperf.tree import gather

    gathered = gather(work for run_dir in runs for work in work_folders(run_dir))
    if gathered.empty():
        raise RunError(
            "the runs hold no LoadGen output (mlperf_log_detail.txt) and no MLPerf training log",
            hint="bench run mlperf_inference or mlperf_training first; " + ", ".join(runs),
        )
    return gathered


def _destination(options: SubmitOptions, site: str) -> Destination:
    """Where the tree goes: the output folder, division, submitter and system (--system, else
    the runs' site), each name checked."""
    from caramel.consumers.mlperf.tree import Destination

    system = checked_name(options.system or site, "--system")
    return Destination(
        Path(options.output),
        options.division,
        checked_name(options.submitter, "--submitter"),
        system,
    )


def _print_problems(problems: list[Problem], push: bool, out: TextIO) -> bool:
    """The checker's problems, one a line (and, with --push, that nothing was pushed); whether
    there were any."""
    for problem in problems:
        out.write(f"{problem}\n")
    if problems and push:
        out.write(f"{len(problems)} problem(s): the tree was not pushed\n")
    return bool(problems)


def work_folders(run_dir: str) -> Iterator[tuple[Path, dict[str, str], str]]:
    """(work folder, params, caramel benchmark) of every workpackage of a run."""
    from caramel.stages.analyse.inputs import from_run

    inp = from_run(run_dir)
    for record in inp.workpackages:
        yield Path(record.work_dir), dict(record.params), inp.benchmark.name


def run_fingerprint(run_dir: str) -> tuple[dict[str, Any], str]:
    """The nodes' fingerprint and the site of a run, as the history records them."""
    from caramel.consumers.history.fingerprint import from_run, site_name
    from caramel.stages.state.store import Store, db_path

    store = Store(db_path(run_dir), readonly=True)
    try:
        jobs = store.jobs_and_end()[0]
    finally:
        store.close()
    return from_run(run_dir, jobs), site_name(jobs)


def system_description(fingerprint: dict[str, Any], where: Destination) -> dict[str, Any]:
    from caramel.consumers.mlperf.system import describe, framework_versions, gpu_libraries

    software = framework_versions() | gpu_libraries()
    return describe(fingerprint, where.division, where.submitter, where.system, software)


def record_runs(runs: list[str], history: str | None) -> None:
    """Every run's figures into the history, with its site and fingerprint, as `bench result` adds
    them (history.record.add_quietly: a history that cannot be written is a warning)."""
    from caramel.consumers.history.record import add_quietly
    from caramel.stages.analyse.inputs import from_run
    from caramel.stages.report.results import history_change, history_tables, produce

    for run_dir in runs:
        inp = from_run(run_dir)
        produced = produce(inp, None)
        if produced.made:
            made = produced.made
            add_quietly(
                history,
                inp,
                partial(history_tables, inp, made),
                produced.from_cache,
                history_change(inp, produced),
            )


def push(options: SubmitOptions, where: Destination, runs: int, out: TextIO) -> None:
    from caramel.consumers.mlperf.push import push_tree

    assert options.push is not None
    message = (
        f"MLPerf submission: {where.division}/{where.submitter}, system {where.system} "
        f"({runs} caramel run(s))"
    )
    commit = push_tree(Path(options.output), options.push, options.branch, message)
    if commit is None:
        out.write(f"{options.push} ({options.branch}) already holds this tree: nothing pushed\n")
    else:
        out.write(f"pushed {commit[:12]} to {options.push} ({options.branch})\n")
