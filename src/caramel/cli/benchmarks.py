"""`bench benchmarks` and `bench list`: the benchmarks one can run by name (caramel.catalog).

A folder's MAD models.json lists one row per model. `bench list --tags` also shows the files that
could not be read and that the tags may mean (a suite with those tags reports them as failed)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from caramel.cli.tables import print_table

if TYPE_CHECKING:  # the catalog reads XML and YAML: imported by the commands, not by `bench --help`
    from caramel.catalog import BenchmarkEntry


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("benchmarks", help="list the shipped and user benchmarks (run them by name)")
    parser.add_argument("--benchmarks", action="append", default=[], metavar="DIR",
                        help="a folder of benchmark files searched before $CARAMEL_BENCHMARKS_PATH (repeatable)")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(func=run_benchmarks)
    parser = sub.add_parser("list", help="list benchmarks, selected by tags (any tag matches; a name is a tag)")
    parser.add_argument("dirs", nargs="*", metavar="DIR", help="folders of benchmark files searched first")
    parser.add_argument("--tags", nargs="+", action="extend", default=[], metavar="TAG",
                        help="only benchmarks with any of these tags (a benchmark's name is one of its tags)")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(func=run_list)


def run_benchmarks(args: argparse.Namespace) -> int:
    from caramel.catalog import find_benchmarks

    show(find_benchmarks(args.benchmarks), args.format)
    return 0


def run_list(args: argparse.Namespace) -> int:
    from caramel.catalog import find_benchmarks, select_by_tags, unreadable_members

    # `--tags a b DIR` takes DIR as a tag; a folder that exists is never meant as one
    dirs = args.dirs + [t for t in args.tags if os.path.isdir(t)]
    args.tags = [t for t in args.tags if not os.path.isdir(t)]
    entries = find_benchmarks(dirs)
    chosen = select_by_tags(entries, args.tags) + unreadable_members(entries, args.tags) if args.tags else entries
    show(chosen, args.format)
    return 0


def entry_json(entry: BenchmarkEntry) -> dict:
    meta = entry.meta
    doc = {"name": entry.name, "path": entry.path, "origin": entry.origin, "description": meta.description,
           "tags": list(entry.tags), "systems": list(meta.systems), "owner": meta.owner,
           "precision": meta.precision, "devices": meta.devices, "time_limit": meta.time_limit, "url": meta.url,
           "multiple_results": meta.multiple_results}
    if entry.error:
        doc["error"] = entry.error
    return doc


def show(entries: list[BenchmarkEntry], style: str) -> None:
    if style == "json":
        print(json.dumps([entry_json(e) for e in entries], indent=1))
        return
    if not entries:
        print("no benchmarks found (shipped, $CARAMEL_BENCHMARKS_PATH, --benchmarks DIR)")
        return
    header = ["name", "description", "tags", "systems", "origin"]
    rows = [[e.name, (f"cannot read: {e.error.splitlines()[0]}" if e.error else e.meta.description)[:60],
             ",".join(e.tags), ",".join(e.meta.systems) or "any", e.origin] for e in entries]
    print_table(sys.stdout, header, rows)
