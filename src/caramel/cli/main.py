"""`bench` entry point: builds the argument parser from the subcommand modules and runs one."""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import pkgutil
import signal
import sqlite3
import sys
from types import FrameType, ModuleType

from caramel import __version__
from caramel.cli.arguments import BenchParser, command_parsers, refuse_unknown
from caramel.cli.spellings import add_old_spelling, check_required
from caramel.errors import STOP_SIGNALS, CaramelError, InternalError, Interrupted
from caramel.settings import command_scope

# A command is a module of this package that declares its name, `COMMAND = "plan"`, and its parser
# setup, `register(subparsers)`, which binds the command's function (`set_defaults(func=...)`); the
# module is named after the command, or the command and `_cmd` where Python or a package has the
# name (continue_cmd, import_cmd, history_cmd). As Ramble's cmd/ modules (ramble/cmd/__init__.py,
# `all_commands`, `get_module`): found by listing the package, imported only when needed.
SUFFIX = "_cmd"


def module_names() -> list[str]:
    """The modules of caramel.cli, from its folder (nothing is imported)."""
    import caramel.cli

    found = pkgutil.iter_modules(caramel.cli.__path__)
    return sorted(info.name for info in found if info.name != "main")


def command_module(name: str, modules: list[str]) -> ModuleType | None:
    """The module of command `name` (None: no module declares it by that name)."""
    for module_name in (name, name + SUFFIX):
        if module_name in modules:
            module = importlib.import_module(f"caramel.cli.{module_name}")
            if getattr(module, "COMMAND", None) == name:
                return module
    return None


def command_modules(modules: list[str]) -> list[ModuleType]:
    """Every command module, in the order of their names (each module of caramel.cli imported)."""
    found = (importlib.import_module(f"caramel.cli.{name}") for name in modules)
    commands = (m for m in found if isinstance(getattr(m, "COMMAND", None), str))
    return sorted(commands, key=lambda m: m.COMMAND)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, only their command's module is imported when it is known
    (importing all twenty costs every call 0.1 s), else every command (`bench --help` lists
    them)."""
    parser = BenchParser(
        prog="bench", description="caramel: JUBE-compatible benchmarks for ML on HPC"
    )
    parser.add_argument("-V", "--version", action="version", version=f"caramel {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="JUBE's verbosity: in bench, a traceback on errors as --debug (bench log and bench "
        "output show the commands run and what they wrote)",
    )
    add_old_spelling(parser, "--devel", "--debug")  # JUBE's --devel: its traceback
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    modules = module_names()
    command = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    module = command_module(command, modules) if command else None
    for found in [module] if module is not None else command_modules(modules):
        found.register(sub)
    return parser


def _each_run(args: argparse.Namespace) -> int:
    """The command, once; or, for JUBE's `-i all`, `-i -1`, `-i 0 1` and `result -n N`, once per
    run chosen (as if DIR named it), the worst exit code kept; `bench report` takes them at once."""
    from caramel.cli.common import runs_to_visit

    runs = None
    if not getattr(args, "runs_at_once", False):
        runs = runs_to_visit(
            getattr(args, "dir", None), getattr(args, "id", None), getattr(args, "num", None)
        )
    if runs is None:
        return int(args.func(args) or 0)
    if getattr(args, "reverse", False):  # JUBE's result -r: the newest run first
        runs.reverse()
    worst = 0
    for run_dir in runs:
        args.dir, args.id = run_dir, None
        worst = max(worst, int(args.func(args) or 0))
    return worst


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    if argv is not None:  # called from Python (tests, scripts): the caller's process, its signals
        return _main(argv)
    try:
        return _main(argv)
    finally:
        # bench's answer is decided: a signal arriving while Python shuts down must not turn it into
        # a death by signal (exit -15). Blocked signals are dropped when the process exits.
        with contextlib.suppress(ValueError, OSError):
            signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))


def _main(argv: list[str] | None) -> int:
    _stop_signals_interrupt()
    args = _parse(argv)
    try:
        with command_scope():  # every setting read once, as the command starts
            return _command(args)
    except KeyboardInterrupt as exc:  # Ctrl-C, or a stop signal as `Interrupted` (its run, signal)
        return _stopped(exc)
    except BrokenPipeError:  # the output's reader went away (`bench result | head`): nothing to say
        return 0
    except Exception as exc:
        if args.debug or args.verbose:
            raise
        error = user_error(exc)
        print(f"{error.label}: {error}", file=sys.stderr)
        return error.exit_code


def _stop_signals_interrupt() -> None:
    """Each stop signal (SIGTERM, SIGHUP, ...) ends any command as Ctrl-C does: one line, exit
    128 + its number (a run's engine refines this: it records what it stopped)."""
    with contextlib.suppress(ValueError):  # not the main thread
        for signum in STOP_SIGNALS:
            if signum != signal.SIGINT:
                signal.signal(signum, _terminated)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line parsed; an unknown flag or a missing argument named as the command's (the
    shell's completion request answered, and the process ended, first)."""
    if argv is None and "_ARGCOMPLETE" in os.environ:  # the shell asks for completions
        from caramel.cli.completion import complete_and_exit

        complete_and_exit(build_parser)
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # argparse would show bench's usage: the command's, and the flag meant
        refuse_unknown(parser, args, extra, build_parser)
    check_required(command_parsers(parser, args)[0][-1], args)
    return args


def _command(args: argparse.Namespace) -> int:
    """The command on a campaign's runs (-c), else on each run it names."""
    if getattr(args, "campaign", None):
        from caramel.cli.campaign import for_campaign

        return for_campaign(args)
    return _each_run(args)


def _stopped(exc: KeyboardInterrupt) -> int:
    """Ctrl-C or a stop signal: one line saying so, and its exit code."""
    stop = exc if isinstance(exc, Interrupted) else Interrupted()
    with contextlib.suppress(
        OSError
    ):  # the terminal of a closed login (SIGHUP) takes no more lines
        print(stop, file=sys.stderr)
    return stop.exit_code


# OSErrors that mean caramel misused the system (a bug), not that a file or the disk is in the way.
PROGRAM_ERRNOS = {errno.EBADF, errno.EINVAL, errno.EFAULT}


def user_error(exc: Exception) -> CaramelError:
    """What an exception that ended a command is to the user, as a caramel error whose class carries
    the exit code: a caramel error as raised; an OSError or a database error no caramel code wrapped
    as the disk's doing (a full disk, a missing or busy file, too many open files: never a bug); any
    other exception, and an OSError of a bad descriptor or argument, as a bug in caramel."""
    if isinstance(exc, CaramelError):
        return exc
    if isinstance(exc, OSError) and exc.errno not in PROGRAM_ERRNOS:
        return os_error(exc)
    if isinstance(exc, sqlite3.Error):  # a database caramel did not wrap (state.dbfile)
        return CaramelError(
            f"a database could not be used: {exc}",
            hint="check the free space and the permissions of the run folder and of the history",
        )
    return InternalError.of(exc)


def os_error(exc: OSError) -> CaramelError:
    """An OSError no caramel code wrapped: the path (when the system said, never "?" nor the current
    folder), the real cause, and how to go on."""
    from caramel.fs.oserrors import file_error

    writing = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)
    error = file_error(exc, action="write" if writing else "use")
    then = "then run the command again (bench continue finishes a run)"
    error.hint = f"{error.hint}; {then}" if error.hint else then
    return error


if __name__ == "__main__":
    sys.exit(main())
