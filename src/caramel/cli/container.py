"""`bench container build DEF [-o IMAGE]` and `bench container pull URI -o IMAGE`: Apptainer images via spython."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from caramel.containers import images


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("container", help="build or pull the Apptainer images the benchmarks use")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    build = actions.add_parser("build", help="build an image from a definition file (a path, or the name of one of caramel's: pytorch.def)")
    build.add_argument("definition", type=Path)
    build.add_argument("-o", "--output", type=Path, help="the image (default: the definition's name, .sif)")
    build.add_argument("--no-fakeroot", action="store_true", help="build without --fakeroot (as root)")
    pull = actions.add_parser("pull", help="pull an image (docker://, library://, oras://)")
    pull.add_argument("uri")
    pull.add_argument("-o", "--output", type=Path, required=True)
    for action in (build, pull):
        action.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        args.definition, from_caramel = images.find_definition(args.definition)
        # the image of a shipped definition goes into this folder, never beside caramel's installed files
        image = args.output or (Path(args.definition.stem + ".sif") if from_caramel else args.definition.with_suffix(".sif"))
        command = images.build_command(args.definition, image, not args.no_fakeroot)
        if not args.dry_run:
            images.build(args.definition, image, not args.no_fakeroot)
    else:
        image = args.output
        command = images.pull_command(args.uri, image)
        if not args.dry_run:
            images.pull(args.uri, image)
    print(shlex.join(command) if args.dry_run else f"wrote {image}")
    return 0
