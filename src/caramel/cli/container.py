"""`bench container build DEF [-o IMAGE]` and `bench container pull URI -o IMAGE`: Apptainer images
via spython."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

COMMAND = "container"  # `bench container` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "container", help="build or pull the Apptainer images the benchmarks use"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    build = actions.add_parser(
        "build",
        help=(
            "build an image from a definition file "
            "(a path, or the name of one of caramel's: pytorch.def)"
        ),
    )
    build.add_argument("definition", type=Path)
    build.add_argument(
        "-o", "--output", type=Path, help="the image (default: the definition's name, .sif)"
    )
    build.add_argument(
        "--no-fakeroot", action="store_true", help="build without --fakeroot (as root)"
    )
    pull = actions.add_parser("pull", help="pull an image (docker://, library://, oras://)")
    pull.add_argument("uri")
    pull.add_argument("-o", "--output", type=Path, required=True)
    for action in (build, pull):
        action.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class ContainerOptions:
    action: Literal["build", "pull"]
    definition: Path | None = None  # build: a definition file, or the name of one of caramel's
    uri: str | None = None  # pull: docker://, library://, oras://
    output: Path | None = None
    fakeroot: bool = True
    dry_run: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ContainerOptions:
        if args.action == "build":
            return cls(
                "build",
                definition=args.definition,
                output=args.output,
                fakeroot=not args.no_fakeroot,
                dry_run=args.dry_run,
            )
        return cls("pull", uri=args.uri, output=args.output, dry_run=args.dry_run)


def run(args: argparse.Namespace) -> int:
    return container(ContainerOptions.from_args(args), sys.stdout)


def container(options: ContainerOptions, out: TextIO) -> int:
    """`bench container build|pull`: the image made (or, with dry_run, the command that would make
    it)."""
    make = _build if options.action == "build" else _pull
    image, command = make(options)
    out.write((shlex.join(command) if options.dry_run else f"wrote {image}") + "\n")
    return 0


def _build(options: ContainerOptions) -> tuple[Path, list[str]]:
    """The image built from its definition (unless dry_run); the image and the command."""
    from caramel.adapters.containers import images

    assert options.definition is not None
    definition, from_caramel = images.find_definition(options.definition)
    # the image of a shipped definition goes into this folder, never beside caramel's installed
    # files
    image = options.output or (
        Path(definition.stem + ".sif") if from_caramel else definition.with_suffix(".sif")
    )
    command = images.build_command(definition, image, options.fakeroot)
    if not options.dry_run:
        images.build(definition, image, options.fakeroot)
    return image, command


def _pull(options: ContainerOptions) -> tuple[Path, list[str]]:
    """The image pulled from its URI (unless dry_run); the image and the command."""
    from caramel.adapters.containers import images

    assert options.uri is not None and options.output is not None
    command = images.pull_command(options.uri, options.output)
    if not options.dry_run:
        images.pull(options.uri, options.output)
    return options.output, command
