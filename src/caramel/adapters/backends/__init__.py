"""How a run's workpackages run: a launcher (how a script runs: `backends.launchers`) and a
scheduler (who answers for the jobs its do's submit: `backends.schedulers`), as ReFrame separates
them. Each is found by name in its registry; nothing outside this package names a concrete one.

    backend = backends.for_system(bench.system)       # a new run: the system's scheduler
    backend = backends.for_run(store.info().settings)  # a stored run: the names it was started with
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caramel.adapters.backends import launchers, schedulers
from caramel.adapters.backends.launchers import Launcher, Shell
from caramel.adapters.backends.schedulers import JobState, Scheduler
from caramel.stages.spec.system import SystemFacts

__all__ = ["Backend", "JobState", "Launcher", "Scheduler", "Shell", "for_run", "for_system"]


@dataclass(frozen=True)
class Backend:
    """A run's launcher and scheduler."""

    launcher: Launcher
    scheduler: Scheduler

    def settings(self) -> dict[str, str]:
        """The names a run stores, so `continue` and `cancel` find the same ones."""
        return {"launcher": self.launcher.name, "scheduler": self.scheduler.name}


def for_system(
    system: SystemFacts | None, scheduler: str | None = None, launcher: str = "local"
) -> Backend:
    """The backend of a new run on `system`: `scheduler` when given, else the system's (see
    `schedulers.for_system`)."""
    chosen = schedulers.get(scheduler) if scheduler else schedulers.for_system(system)
    return Backend(launchers.get(launcher), chosen)


def for_run(settings: dict[str, Any]) -> Backend:
    """The backend a stored run was started with. Runs stored before launchers and schedulers were
    apart name a `backend` (`local` or `slurm`): `slurm` is that scheduler, `local` followed the
    jobs of this host's scheduler."""
    name = settings.get("scheduler") or ("slurm" if settings.get("backend") == "slurm" else None)
    return Backend(
        launchers.get(settings.get("launcher") or "local"),
        schedulers.get(name) if name else schedulers.on_this_host(),
    )
