"""The interface every backend implements, and the registry of backends."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

_REGISTRY: dict[str, type[Backend]] = {}


def register(name: str) -> Callable[[type[Backend]], type[Backend]]:
    """Class decorator: make a backend available under `name`."""
    def wrap(cls: type[Backend]) -> type[Backend]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return wrap


def registered() -> dict[str, type[Backend]]:
    return dict(_REGISTRY)


class Shell(Protocol):
    """A shell that runs workpackage scripts one after the other (engine.script writes them).

    `send` hands it a script; its markers are read from `fileno()`; end of file there means the
    shell itself died (then `returncode()` tells how)."""

    pid: int

    def send(self, script: str) -> None: ...
    def fileno(self) -> int: ...
    def returncode(self) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...
    def close(self) -> None: ...


@dataclass
class JobState:
    """What a batch scheduler says about the job a waiting workpackage submitted."""

    state: str  # pending | running | done | failed | gone
    reason: str = ""  # what to tell the user: "TIMEOUT", "FAILED (exit 3)", "CANCELLED by 0"
    slurm_state: str = ""  # the scheduler's own word for it
    exit_code: int | None = None
    nodes: str = ""
    ended: float | None = None  # when the scheduler says the job ended (epoch seconds)


class Backend(abc.ABC):
    """Where workpackage scripts run; reports on jobs that waiting workpackages submitted."""

    name = ""

    @abc.abstractmethod
    def open_shell(self, env: dict[str, str]) -> Shell:
        """A new shell with environment `env`, ready for `send`."""

    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        """The state of the jobs waiting workpackages submitted, one scheduler query for all. A waiting
        workpackage whose job ended (`done`, `failed` or `gone`) without its done file fails."""
        return {}

    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        """Cancel these jobs; (ok, message)."""
        return (not job_ids, "this backend has no jobs to cancel" if job_ids else "")
