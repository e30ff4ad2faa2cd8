"""`bench benchmarks` and `bench list`: the benchmarks one can run by name
(caramel.consumers.catalog).

A folder's MAD models.json lists one row per model. `bench list --tags` also shows the files that
could not be read and that the tags may mean (a suite with those tags reports them as failed).
`bench list` parses its arguments in cli/list_cmd.py."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.cli.tables import CELL_WIDTH, clip, print_table

if TYPE_CHECKING:  # the catalog reads XML and YAML: imported by the commands, not by `bench --help`
    from caramel.consumers.catalog import BenchmarkEntry


@dataclass(frozen=True)
class ListOptions:
    """`bench benchmarks` and `bench list`: the folders searched first, the tags selecting (none:
    all)."""

    dirs: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ListOptions:
        return cls(dirs=tuple(args.benchmarks), json=args.format == "json")

    @classmethod
    def from_list_args(cls, args: argparse.Namespace) -> ListOptions:
        # `--tags a b DIR` takes DIR as a tag; a folder that exists is never meant as one
        return cls(
            dirs=tuple(args.dirs) + tuple(t for t in args.tags if os.path.isdir(t)),
            tags=tuple(t for t in args.tags if not os.path.isdir(t)),
            json=args.format == "json",
        )


COMMAND = "benchmarks"  # `bench benchmarks` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "benchmarks", help="list the shipped and user benchmarks (run them by name)"
    )
    parser.add_argument(
        "--benchmarks",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of benchmark files searched before $CARAMEL_BENCHMARKS_PATH (repeatable)",
    )
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(func=lambda args: list_benchmarks(ListOptions.from_args(args), sys.stdout))


def list_benchmarks(options: ListOptions, out: TextIO) -> int:
    from caramel.consumers.catalog import find_benchmarks, select_by_tags, unreadable_members

    entries = find_benchmarks(options.dirs)
    if options.tags:
        entries = select_by_tags(entries, options.tags) + unreadable_members(entries, options.tags)
    show(entries, "json" if options.json else "table", out)
    return 0


def entry_json(entry: BenchmarkEntry) -> dict[str, object]:
    meta = entry.meta
    doc: dict[str, object] = {
        "name": entry.name,
        "path": entry.path,
        "origin": entry.origin,
        "description": meta.description,
        "tags": list(entry.tags),
        "systems": list(meta.systems),
        "owner": meta.owner,
        "precision": meta.precision,
        "devices": meta.devices,
        "time_limit": meta.time_limit,
        "url": meta.url,
        "multiple_results": meta.multiple_results,
    }
    if entry.error:
        doc["error"] = entry.error
    return doc


def show(entries: list[BenchmarkEntry], style: str, out: TextIO) -> None:
    if style == "json":
        out.write(json.dumps([entry_json(e) for e in entries], indent=1) + "\n")
        return
    if not entries:
        out.write("no benchmarks found (shipped, $CARAMEL_BENCHMARKS_PATH, --benchmarks DIR)\n")
        return
    header = ["name", "description", "tags", "systems", "origin"]
    rows = [
        [
            e.name,
            clip(
                f"cannot read: {e.error.splitlines()[0]}" if e.error else e.meta.description,
                CELL_WIDTH,
            ),
            ",".join(e.tags),
            ",".join(e.meta.systems) or "any",
            e.origin,
        ]
        for e in entries
    ]
    print_table(out, header, rows)
