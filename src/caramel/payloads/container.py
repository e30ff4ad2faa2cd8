"""Run a command in a container through a named runtime: the job wrapper's entry point.

    python -m caramel.payloads.container --runtime charliecloud --image ROOTFS --bind HOST:/mnt --
    CMD ...

Replaces itself with the runtime's command line (so signals and the exit code are the command's).
Standard library only (and caramel's own): it runs on the host, outside any image.
"""

from __future__ import annotations

import argparse
import os
import sys

from caramel.adapters.backends.launchers import wrapped_command
from caramel.adapters.containers.runtime import runtime, shell_line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", required=True, help="apptainer or charliecloud")
    parser.add_argument(
        "--image", required=True, help="a .sif image (apptainer) or a root filesystem folder"
    )
    parser.add_argument("--bind", action="append", default=[], help="HOST[:GUEST], repeatable")
    parser.add_argument("--gpu-flag", default="", help="apptainer only: --nv or --rocm")
    parser.add_argument(
        "--print", action="store_true", help="print the command line instead of running it"
    )
    args, command = wrapped_command(parser, argv)
    try:
        chosen = runtime(args.runtime, **({"gpu_flag": args.gpu_flag} if args.gpu_flag else {}))
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    line = chosen.command(args.image, command, tuple(args.bind))
    if args.print:
        print(shell_line(line))
        return 0
    if args.runtime == "charliecloud":
        os.environ.setdefault("USER", "root")  # ch-run refuses to start without $USER
    try:
        os.execvp(line[0], line)
    except FileNotFoundError:
        print(
            f"caramel: {line[0]} not found: is the {args.runtime} runtime installed?",
            file=sys.stderr,
        )
        return 127


if __name__ == "__main__":
    sys.exit(main())
