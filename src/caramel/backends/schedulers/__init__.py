"""Batch schedulers: who takes a job script and answers for its job (ReFrame's split of a scheduler
from a launcher). One module per scheduler in this package, each a subclass of `Scheduler` under
`@register("name")`; `get(name)` finds it, `names()` lists them (system files are checked against
it). A new scheduler (PBS, Flux) is one module here and its tests; docs/backends.md has a skeleton.

What a scheduler owns: the submit line of a job script and the job id its output names, the states
of many jobs in one query, cancelling, its job script template and time format, the commands it
needs on PATH, and the name of the site its jobs ran on.
"""

from __future__ import annotations

import abc
import functools
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from caramel.backends.registry import Registry
from caramel.errors import RunError
from caramel.spec.system import SystemFacts
from caramel.vocabulary import JobStatus

NO_SCHEDULER = ("local", "none")  # system values meaning "no scheduler of caramel's own" (none.py)


@dataclass
class JobState:
    """What a batch scheduler says about the job a waiting workpackage submitted."""

    state: JobStatus
    reason: str = ""  # what to tell the user: "TIMEOUT", "FAILED (exit 3)", "CANCELLED by 0"
    exit_code: int | None = None
    nodes: str = ""
    ended: float | None = None  # when the scheduler says the job ended (epoch seconds)


class Scheduler(abc.ABC):
    """A batch system as the engine, `bench cancel`, provenance and `bench run` see it."""

    name = ""
    commands: tuple[str, ...] = ()  # what a run on this scheduler needs on PATH (bench run checks it)
    template = ""  # the folder of templates/ holding its job.sh.j2 (steps with `submit: true`)

    def missing(self) -> list[str]:
        """Its commands that are not on PATH here, in order (empty: it can run here)."""
        return [c for c in self.commands if shutil.which(c) is None]

    def found_here(self) -> bool:
        """Whether this host submits to it (a login node): a run without a scheduler of its own
        follows the jobs its do's submit through the scheduler found here."""
        return bool(self.commands) and not self.missing()

    @abc.abstractmethod
    def submit_line(self, job_file: str) -> str:
        """The shell line that submits `job_file` (in the work folder) and prints the job's id."""

    @abc.abstractmethod
    def job_id_in(self, path: str) -> str:
        """The last job id a submission printed into the file `path`; '' when none."""

    @abc.abstractmethod
    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        """The states of `job_ids` in ONE query, however many. A job it cannot answer for is left out
        (nothing known: the workpackage waits), never reported failed."""

    @abc.abstractmethod
    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        """Cancel these jobs; (ok, message)."""

    cancel_command = ""  # the command `cancel` runs, as bench cancel's events name it

    def submit(self, job_file: str, cwd: str, array: str = "", after: Sequence[str] = (),
               corresponding: bool = False) -> str:
        """Submit `job_file` (in `cwd`) as caramel queues it itself: a job array when `array` is given
        ("0-39%4", "3,7,9"), held until the jobs `after` ended well (`corresponding`: each task after
        the task of the same index of the arrays `after`). The job's id; a RunError with the
        scheduler's words when it refuses."""
        raise RunError(f"scheduler {self.name!r} cannot queue jobs itself (job arrays, dependencies)")

    def max_array_size(self) -> int:
        """The most tasks one job array may have here, its indices 0..N-1 (0: it has no arrays)."""
        return 0

    def array_directives(self, script: str) -> tuple[str, ...]:
        """The resource lines of a job script that an array shared by several scripts must carry
        (two scripts with the same ones may be tasks of one array)."""
        return ()

    def array_script(self, values: dict[str, Any]) -> str:
        """The script of a job array whose task i runs the job script of the work folder the map names
        for i: `templates/<template>/array.sh.j2` rendered with `values`."""
        return self.job_script(values, "array.sh.j2")

    def site(self, job_ids: list[str]) -> str:
        """The name of the cluster the jobs ran on ('' when it cannot say)."""
        return ""

    def time_text(self, seconds: float) -> str:
        """A job time limit as its script's directive takes it ([D-]HH:MM:SS)."""
        from caramel.spec.limits import slurm_time

        return slurm_time(seconds)

    def job_script(self, values: dict[str, Any], template: str = "job.sh.j2") -> str:
        """The job script: `templates/<template>/job.sh.j2` rendered with `values` (engine.jobscript
        names them: resources, modules, environment, body, done file)."""
        if not self.template:
            raise RunError(f"scheduler {self.name!r} has no job script template")
        from caramel.spec.sources import templates_dir

        return _templates(str(templates_dir() / self.template)).get_template(template).render(**values)


@functools.lru_cache(maxsize=8)
def _templates(folder: str) -> Any:
    """The jinja2 environment of a template folder, made once: a thousand job scripts compile it once."""
    import shlex

    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, auto_reload=False)
    env.filters["shquote"] = lambda value: shlex.quote(str(value))
    return env


REGISTRY: Registry[Scheduler] = Registry("scheduler", __name__, __path__)
register = REGISTRY.register  # class decorator: @register("name")
names = REGISTRY.names  # every registered scheduler's name, sorted


def get(name: str) -> Scheduler:
    """A new instance of the scheduler registered as `name`; a RunError names the known ones."""
    return REGISTRY.get(name)


def on_this_host() -> Scheduler:
    """The batch scheduler this host submits to (the first registered one found here), else none."""
    for name in names():
        if name not in NO_SCHEDULER:
            scheduler = get(name)
            if scheduler.found_here():
                return scheduler
    return get("none")


def for_system(system: SystemFacts | None) -> Scheduler:
    """The scheduler of a run on `system` (a System, or None): the one it names; with none named
    (`local`, or no system file) the one this host submits to, so jobs a do submits by itself
    (JUBE's `$submit $submit_script` on a login node) are followed as before."""
    name = (system.scheduler if system is not None else "") or "local"
    return on_this_host() if name in NO_SCHEDULER else get(name)
