"""`bench run --suite TAG [TAG ...] --tag SYSTEM ...`: every benchmark a tag selects, as one
campaign.

The benchmarks come from the catalog (caramel's shipped folder, `$CARAMEL_BENCHMARKS_PATH`,
`--benchmarks DIR`), selected with MAD's rule (any of the tags; a benchmark's name is a tag of
its own). They run one after the other with the same system tags; each is a run of its own,
remembered under one campaign id, so `bench status/continue/result/cancel -c last` act on all.
A benchmark that cannot run with these tags is reported and the others go on; a --tag that no
member's file uses and no system file is named after is refused before the campaign is made.

No member is lost: a file (or models.json entry) that cannot be read and that the tags may mean
(its tags or name match, or its tags cannot be known) is a failed member of the campaign, with
its error, recorded so `bench result -c` shows it as a FAILURE row; the campaign then exits 2.
A models.json entry runs as its file with `--only-bench NAME`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from caramel.errors import CaramelError, RunError

if TYPE_CHECKING:
    from caramel.cli.common import BenchmarkOptions
    from caramel.cli.run import RunOptions
    from caramel.consumers.catalog import BenchmarkEntry


def run_suite(
    options: RunOptions, out: TextIO, run_benchmarks: Callable[[RunOptions, TextIO], int]
) -> int:
    """Run the benchmarks `options.suite` selects as one campaign, each with the other options,
    through `run_benchmarks` (cli.run's, passed in: the campaign wraps the command, it does not
    import it)."""
    from caramel.consumers.catalog import find_benchmarks, select_by_tags, unreadable_members
    from caramel.stages.state.campaigns import add_failure, new_campaign

    source, suite = options.source, list(options.suite or ())
    if source.file:
        raise RunError(
            f"--suite selects the benchmarks by tag: drop the file '{source.file}'",
            hint="bench run --suite cpu-smoke --tag local, or bench run FILE --tag ...",
        )
    found = find_benchmarks(list(source.benchmarks))
    entries = select_by_tags(found, suite)
    broken = unreadable_members(found, suite)
    _check_tags(source, [entry.path for entry in entries])
    campaign = new_campaign(os.getcwd(), suite, list(source.tags))
    out.write(f"campaign {campaign}: {_members_line(entries, broken)}\n")
    out.flush()
    code = 0
    for entry in broken:
        print(
            f"== {entry.name} ({entry.path}): FAILED, cannot read: {entry.error}",
            file=sys.stderr,
            flush=True,
        )
        add_failure(campaign, entry.name, entry.path, entry.error)
        code = 2
    for entry in entries:
        code = max(code, _run_member(options, entry, campaign, run_benchmarks, out))
    out.write(f"campaign {campaign} ended (exit {code}); bench result -c last shows its tables\n")
    out.flush()
    return code


def _members_line(entries: list[BenchmarkEntry], broken: list[BenchmarkEntry]) -> str:
    """The members by name, and those that could not be read."""
    line = f"{len(entries)} benchmark(s): {', '.join(e.name for e in entries)}"
    if broken:
        line += f"; {len(broken)} could not be read: {', '.join(e.name for e in broken)}"
    return line


def _run_member(
    options: RunOptions,
    entry: BenchmarkEntry,
    campaign: str,
    run_benchmarks: Callable[[RunOptions, TextIO], int],
    out: TextIO,
) -> int:
    """One member run with the campaign's options, its folder under the current one and recorded
    in the campaign; its exit code (2 for an error, which does not stop the campaign)."""
    out.write(f"== {entry.name} ({entry.path})\n")
    out.flush()
    source = options.source
    member = dataclasses.replace(
        options,
        suite=None,
        under_cwd=True,
        source=dataclasses.replace(
            source,
            file=entry.path,
            check_tags=False,
            only_bench=(entry.benchmark,) if entry.benchmark else source.only_bench,
        ),
        on_created=_recorder(campaign, entry.name),
    )
    try:
        return run_benchmarks(member, out)
    except CaramelError as exc:
        print(f"error: {entry.name}: {exc}", file=sys.stderr)
        return 2


def _check_tags(source: BenchmarkOptions, paths: list[str]) -> None:
    """Refuse, before the campaign is made, a --tag that no member's file uses and no system file
    is named after; a member need not use every tag (the others' sizes, say), so members do not
    check."""
    from caramel.adapters.systems import system_names
    from caramel.stages.spec.loader import known_tags
    from caramel.stages.spec.tagscan import check_given_tags

    known: set[str] = set()
    for path in paths:
        # a member that cannot be read says why when it runs
        with contextlib.suppress(CaramelError):
            known |= known_tags(path, list(source.include_path))
    check_given_tags(
        source.tags, known, system_names(list(source.systems)), None, what="the suite's benchmarks"
    )


def _recorder(campaign: str, name: str) -> Callable[[str], None]:
    """What a member's run tells the campaign once its folder exists: the run, under the member's
    name."""
    from caramel.stages.state.campaigns import add_run

    return lambda run_dir: add_run(campaign, run_dir, name)
