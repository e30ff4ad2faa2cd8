"""Errors that reach the user: each names where it happened and what was expected.

The CLI prints `str(error)` and exits with the error's `exit_code`, a class attribute as click's
exceptions carry theirs (click/exceptions.py, `ClickException.exit_code`): 2 for what the user can
fix (bad input, a full disk, a locked database), 3 for a bug in caramel (`InternalError`), 128 +
the signal's number for a stop signal (`Interrupted`). No traceback unless `--debug`.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Location:
    """A place in a benchmark file: path and 1-based line (0 when unknown)."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class CaramelError(Exception):
    """An error meant for the user, optionally tied to a file location."""

    exit_code: ClassVar[int] = 2  # bench's exit status when this error ends a command (docs/cli.md)
    label: ClassVar[str] = "error"  # the word bench prints before it

    def __init__(self, message: str, where: Location | None = None, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class SpecError(CaramelError):
    """The benchmark file is malformed or inconsistent."""


class ExpandError(CaramelError):
    """A parameter could not be evaluated while expanding the parameter space."""


class RunError(CaramelError):
    """A run directory or its state cannot be used."""


class InternalError(CaramelError):
    """A bug in caramel (an exception no caramel code expected): the user can only report it."""

    exit_code: ClassVar[int] = 3
    label: ClassVar[str] = "internal error"

    @classmethod
    def of(cls, exc: BaseException) -> InternalError:
        return cls(
            f"{type(exc).__name__}: {exc}",
            hint="this is a bug in caramel; rerun with --debug and report the traceback",
        )


class Interrupted(KeyboardInterrupt):
    """bench was stopped by a signal (one of STOP_SIGNALS); `run_dir` is the run it stopped, if
    any."""

    def __init__(self, signum: int = signal.SIGINT, run_dir: str = "") -> None:
        super().__init__(signum)
        self.signum = signum
        self.run_dir = run_dir

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a command a signal ended (130: Ctrl-C)."""
        return 128 + self.signum

    def __str__(self) -> str:
        name = signal.Signals(self.signum).name
        if not self.run_dir:
            return f"interrupted by {name}"
        return (
            f"interrupted by {name}: run {self.run_dir} stopped, "
            f"`bench continue {self.run_dir}` goes on"
        )


# Every signal that ends a login or a job stops bench the same recorded way (exit 128 + its number):
# Ctrl-C, `timeout` and batch systems (INT, TERM), a closed ssh connection (HUP), Ctrl-\\ (QUIT), a
# CPU time limit (XCPU), and the warnings SLURM can send before a time limit (USR1, USR2:
# `--signal`).
STOP_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGXCPU", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)


def did_you_mean(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> str:
    """A 'did you mean' hint for a misspelt name, or '' when nothing is close (similarity below
    `cutoff`). The name itself is never suggested: when it is among the candidates it was not
    misspelt."""
    import difflib  # only where a name is wrong: every command imports this module

    close = difflib.get_close_matches(name, sorted(set(candidates) - {name}), n=1, cutoff=cutoff)
    return f"did you mean '{close[0]}'?" if close else ""
