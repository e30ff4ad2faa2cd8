"""`bench run --suite TAG [TAG ...] --tag SYSTEM ...`: every benchmark a tag selects, as one campaign.

The benchmarks come from the catalog (caramel's shipped folder, `$CARAMEL_BENCHMARKS_PATH`,
`--benchmarks DIR`), selected with MAD's rule (any of the tags; a benchmark's name is a tag of
its own). They run one after the other with the same system tags; each is a run of its own,
remembered under one campaign id, so `bench status/continue/result/cancel -c last` act on all.
A benchmark that cannot run with these tags is reported and the others go on.

No member is lost: a file (or models.json entry) that cannot be read and that the tags may mean
(its tags or name match, or its tags cannot be known) is a failed member of the campaign, with
its error, recorded so `bench result -c` shows it as a FAILURE row; the campaign then exits 2.
A models.json entry runs as its file with `--only-bench NAME`.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys

from caramel.errors import CaramelError, RunError


def run_suite(args: argparse.Namespace, run_one) -> int:
    """Run the selected benchmarks as one campaign; `run_one(args)` runs one file (cli.run)."""
    from caramel.catalog import find_benchmarks, select_by_tags, unreadable_members
    from caramel.state.campaigns import add_failure, add_run, new_campaign

    if args.file:
        raise RunError(f"--suite selects the benchmarks by tag: drop the file '{args.file}'",
                       hint="bench run --suite cpu-smoke --tag local, or bench run FILE --tag ...")
    found = find_benchmarks(args.benchmarks)
    entries = select_by_tags(found, args.suite)
    broken = unreadable_members(found, args.suite)
    campaign = new_campaign(os.getcwd(), args.suite, args.tag)
    print(f"campaign {campaign}: {len(entries)} benchmark(s): {', '.join(e.name for e in entries)}"
          + (f"; {len(broken)} could not be read: {', '.join(e.name for e in broken)}" if broken else ""), flush=True)
    code = 0
    for entry in broken:
        print(f"== {entry.name} ({entry.path}): FAILED, cannot read: {entry.error}", file=sys.stderr, flush=True)
        add_failure(campaign, entry.name, entry.path, entry.error)
        code = 2
    for entry in entries:
        print(f"== {entry.name} ({entry.path})", flush=True)
        one = copy.copy(args)
        one.file, one.suite = entry.path, None
        if entry.benchmark:
            one.only_bench = [entry.benchmark]
        one.on_created = lambda run_dir, name=entry.name: add_run(campaign, run_dir, name)
        one.campaign_outpath = True
        try:
            code = max(code, run_one(one))
        except CaramelError as exc:
            print(f"error: {entry.name}: {exc}", file=sys.stderr)
            code = max(code, 2)
    print(f"campaign {campaign} ended (exit {code}); bench result -c last shows its tables", flush=True)
    return code
