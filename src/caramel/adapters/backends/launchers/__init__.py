"""Launchers: how a workpackage's script runs (ReFrame's split of a launcher from a scheduler). The
`local` launcher runs scripts in shells on this machine; a do there may submit a job,
which the run's scheduler (backends.schedulers) then answers for.

One module per launcher in this package, each a subclass of `Launcher` under `@register("name")`;
`get(name)` gives one, `names()` lists them. The system file's `launcher` (srun, mpirun) is another
thing: the command a job script starts its tasks with (`$CARAMEL_LAUNCHER`), free text.
"""

from __future__ import annotations

import abc
import argparse
from typing import Protocol

from caramel.adapters.backends.registry import Registry


class Shell(Protocol):
    """Runs workpackage scripts one after the other (engine.script writes them), each in a process
    group of its own.

    `start` hands it a script (to run on some cores, else where bench may); its markers are read
    from `fileno()`; end of file there means the script's shell died (then `returncode()` tells
    how). `complaints()`: the last lines the shell wrote outside the do's files. `pid`: the
    shell's process group's id (a long-lived shell's, or the running script's own); a script also
    tells its own (its `P` marker): bench stops a script by signalling that group (engine.runner).
    `kill` ends the shell, `close` releases it and leaves what its do's started alone."""

    pid: int

    def start(self, script: str, cpus: set[int] | None = None) -> None: ...
    def fileno(self) -> int: ...
    def complaints(self) -> list[str]: ...
    def returncode(self) -> int: ...
    def kill(self) -> None: ...
    def close(self) -> None: ...


class Launcher(abc.ABC):
    """Where workpackage scripts run."""

    name = ""

    @abc.abstractmethod
    def open_shell(self, env: dict[str, str]) -> Shell:
        """A new shell with environment `env`, ready for `start`."""

    def close(self) -> None:  # noqa: B027 (a launcher keeping nothing between shells has nothing)
        """Release what the launcher keeps between its shells (every shell is closed)."""


REGISTRY: Registry[Launcher] = Registry("launcher", __name__, __path__)
register = REGISTRY.register  # class decorator: @register("name")
names = REGISTRY.names  # every registered launcher's name, sorted


def get(name: str = "local", **options: str) -> Launcher:
    """An instance of the launcher registered as `name`; a RunError names the known ones."""
    return REGISTRY.get(name, **options)


def wrapped_command(
    parser: argparse.ArgumentParser, argv: list[str] | None
) -> tuple[argparse.Namespace, list[str]]:
    """Parse the arguments of a command wrapper (`... -- CMD ARGS`): its options, and the command it
    wraps (what follows `--`); no command is the parser's usage error. The container runner and the
    energy meter are such wrappers."""
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    return args, command
