"""`bench` entry point: builds the argument parser from the subcommand modules and runs one."""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import signal
import sqlite3
import sys

from caramel import __version__
from caramel.errors import STOP_SIGNALS, CaramelError, Interrupted
from caramel.settings import command_scope

# Each subcommand lives in caramel.cli.<module> with `register(subparsers)` and `run(args) -> int`.
COMMANDS = ["plan", "run", "continue_cmd", "status", "log", "info", "remove", "cancel", "result", "analyse",
            "compare", "baseline", "report", "dashboard", "export", "history_cmd", "container", "benchmarks",
            "system", "predict", "config", "layout"]


# Commands whose module has another name (the others: caramel.cli.<command>).
MODULES = {"continue": "continue_cmd", "history": "history_cmd", "import": "export"}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, only their command's module is imported when it is known
    (importing all twenty costs every call 0.1 s), else every command (`bench --help` lists them)."""
    parser = argparse.ArgumentParser(prog="bench", description="caramel: JUBE-compatible benchmarks for ML on HPC")
    parser.add_argument("--version", action="version", version=f"caramel {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    command = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    module = MODULES.get(command or "", command)
    if module in COMMANDS:
        importlib.import_module(f"caramel.cli.{module}").register(sub)
        if command in sub.choices:
            return parser
        return build_parser()
    for name in COMMANDS:
        importlib.import_module(f"caramel.cli.{name}").register(sub)
    return parser


def _terminated(signum, frame) -> None:
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    if argv is not None:  # called from Python (tests, scripts): the caller's process, its signals
        return _main(argv)
    try:
        return _main(argv)
    finally:
        # bench's answer is decided: a signal arriving while Python shuts down must not turn it into a
        # death by signal (exit -15). Blocked signals are dropped when the process exits.
        with contextlib.suppress(ValueError, OSError):
            signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))


def _main(argv: list[str] | None) -> int:
    # Each stop signal (SIGTERM, SIGHUP, ...) ends any command as Ctrl-C does: one line, exit 128 + its
    # number (a run's engine refines this: it records what it stopped).
    with contextlib.suppress(ValueError):  # not the main thread
        for signum in STOP_SIGNALS:
            if signum != signal.SIGINT:
                signal.signal(signum, _terminated)
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        with command_scope():  # every setting read once, as the command starts
            if getattr(args, "campaign", None):
                from caramel.cli.campaign import for_campaign

                return for_campaign(args)
            return int(args.func(args) or 0)
    except CaramelError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        run_dir = getattr(exc, "run_dir", "")
        where = f": run {run_dir} stopped, `bench continue {run_dir}` goes on" if run_dir else ""
        with contextlib.suppress(OSError):  # the terminal of a closed login (SIGHUP) takes no more lines
            print(f"interrupted by {signal.Signals(signum).name}{where}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if args.debug:
            raise
        if exc.errno in PROGRAM_ERRNOS:  # a bad descriptor or argument is caramel's doing
            return _internal(exc)
        # A full disk, a missing or busy file, too many open files: never a bug. The path it
        # concerns (when the system said) and the real cause, never "?" nor the current folder.
        print(f"error: {os_error(exc)}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # a database caramel did not wrap (state.dbfile): still the disk's doing
        if args.debug:
            raise
        print(f"error: a database could not be used: {exc}\n  hint: check the free space and the permissions of "
              "the run folder and of the history", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug in caramel: say so plainly, keep the traceback for --debug
        if args.debug:
            raise
        return _internal(exc)


# OSErrors that mean caramel misused the system (a bug), not that a file or the disk is in the way.
PROGRAM_ERRNOS = {errno.EBADF, errno.EINVAL, errno.EFAULT}


def _internal(exc: BaseException) -> int:
    print(f"internal error: {type(exc).__name__}: {exc}\n  hint: this is a bug in caramel; rerun with "
          "--debug and report the traceback", file=sys.stderr)
    return 3


def os_error(exc: OSError) -> str:
    """An OSError no caramel code wrapped: the path, the cause, and how to go on."""
    from caramel.fs.oserrors import file_error

    writing = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)
    error = file_error(exc, action="write" if writing else "use")
    then = "then run the command again (bench continue finishes a run)"
    error.hint = f"{error.hint}; {then}" if error.hint else then
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
