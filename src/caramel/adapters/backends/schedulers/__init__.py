"""Batch schedulers: who takes a job script and answers for its job (ReFrame's split of a scheduler
from a launcher). One module per scheduler in this package, each a subclass of `Scheduler` under
`@register("name")`; `get(name)` finds it, `names()` lists them (system files are checked against
it). A new scheduler (PBS, Flux) is one module here and its tests; docs/backends.md has a skeleton.

What a scheduler owns: the submit line of a job script and the job id its output names, the states
of many jobs in one query, cancelling, its job script template, time format and further directive
lines (a system's `scheduler_options`), the commands it needs on PATH, the name of the site its jobs
ran on, and what `bench system detect`/`check` ask the site: its partitions, the user's accounts,
whether a partition or an account is known there.
"""

from __future__ import annotations

import abc
import functools
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from caramel.adapters.backends.registry import Registry
from caramel.errors import RunError
from caramel.stages.spec.system import SystemFacts
from caramel.vocabulary import JobStatus

if TYPE_CHECKING:  # jinja2 is imported when a job script is first written
    import jinja2

NO_SCHEDULER = ("local", "none")  # system values meaning "no scheduler of caramel's own" (none.py)


@dataclass
class Partition:
    """A partition (queue) of the site, as its scheduler lists it: what `bench system detect` drafts
    from."""

    name: str
    default: bool
    cpus: int
    memory_mb: int
    gres: str
    time_limit: str  # as the scheduler writes it
    nodes: int

    @property
    def gpus(self) -> int:
        """GPUs per node from the GRES (`gpu:4`, `gpu:a100:4(S:0-1)`)."""
        match = re.search(r"gpu(?::[\w.-]+)?:(\d+)", self.gres)
        return int(match.group(1)) if match else 0


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
    commands: tuple[
        str, ...
    ] = ()  # what a run on this scheduler needs on PATH (bench run checks it)
    site_commands: tuple[
        str, ...
    ] = ()  # what `bench system detect`/`check` ask besides (SLURM's sinfo)
    template = ""  # the folder of templates/ holding its job.sh.j2 (steps with `submit: true`)
    # job script templates carried in the scheduler's module ({"job.sh.j2": text}), found before the
    # template folder's: a scheduler that is one module needs no file in templates/
    script_templates: dict[str, str] = {}
    parallel_launcher = ""  # what a drafted system file names as `launcher:` (SLURM's srun)

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
        """The states of `job_ids` in ONE query, however many. A job it cannot answer for is left
        out (nothing known: the workpackage waits), never reported failed."""

    @abc.abstractmethod
    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        """Cancel these jobs; (ok, message)."""

    cancel_command = ""  # the command `cancel` runs, as bench cancel's events name it

    def submit(
        self,
        job_file: str,
        cwd: str,
        array: str = "",
        after: Sequence[str] = (),
        corresponding: bool = False,
    ) -> str:
        """Submit `job_file` (in `cwd`) as caramel queues it itself: a job array when `array` is
        given ("0-39%4", "3,7,9"), held until the jobs `after` ended well (`corresponding`: each
        task after the task of the same index of the arrays `after`). The job's id; a RunError with
        the scheduler's words when it refuses."""
        raise RunError(
            f"scheduler {self.name!r} cannot queue jobs itself (job arrays, dependencies)"
        )

    def max_array_size(self) -> int:
        """The most tasks one job array may have here, its indices 0..N-1 (0: it has no arrays)."""
        return 0

    def array_directives(self, script: str) -> tuple[str, ...]:
        """The resource lines of a job script that an array shared by several scripts must carry
        (two scripts with the same ones may be tasks of one array)."""
        return ()

    def array_script(self, values: dict[str, Any]) -> str:
        """The script of a job array whose task i runs the job script of the work folder the map
        names for i: `templates/<template>/array.sh.j2` rendered with `values`."""
        return self.job_script(values, "array.sh.j2")

    def site(self, job_ids: list[str]) -> str:
        """The name of the cluster the jobs ran on ('' when it cannot say)."""
        return ""

    def time_text(self, seconds: float) -> str:
        """A job time limit as its script's directive takes it: HH:MM:SS here (hours past 24 as they
        are, as PBS's walltime takes them), whole seconds rounded up; a scheduler may write its
        own."""
        whole = max(1, int(-(-seconds // 1)))
        return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"

    def partitions(self) -> list[Partition]:
        """The site's partitions (queues), the default first among equals (`[]`: it cannot list
        them)."""
        return []

    def user_accounts(self) -> list[str]:
        """The accounts (projects) this user may charge here, first the one to draft ([]:
        unknown)."""
        return []

    def check_partition(self, partition: str) -> tuple[bool, str] | None:
        """Whether the site has `partition`: (ok, what the scheduler said); None when it cannot
        say."""
        return None

    def check_account(self, account: str) -> tuple[bool, str] | None:
        """Whether the site knows `account`: (ok, what the scheduler said); None when it cannot
        say."""
        return None

    def writes_job_scripts(self) -> bool:
        """Whether it has a job script template (steps with `submit: true`, a predicted time
        limit)."""
        return bool(self.template or self.script_templates)

    def job_script(self, values: dict[str, Any], template: str = "job.sh.j2") -> str:
        """The job script: the template `template` (the module's own text, else the one in
        `templates/<template folder>/`) rendered with `values` (engine.jobscript names them:
        resources, modules, environment, scheduler_options, body, done file)."""
        if not self.writes_job_scripts():
            raise RunError(f"scheduler {self.name!r} has no job script template")
        from caramel.stages.spec.sources import templates_dir

        texts = tuple(sorted(self.script_templates.items()))
        return _template(str(templates_dir()), self.template, texts, template).render(**values)


# the folder of templates/ holding fingerprint.sh, the node probe every job script includes
NODE_PROBE_FOLDER = "slurm"


def log_call(argv: Sequence[str]) -> None:
    """A scheduler command about to run (its name and argument count), appended to
    $CARAMEL_SCHEDULER_LOG when it is set: the tests and perf/ count sbatch and sacct calls so
    (engine.call_batch logs the sbatch
    submitit runs for it)."""
    from caramel.settings import current

    path = current().scheduler_log
    if path:
        with open(path, "a") as handle:
            handle.write(f"{time.time():.3f} {argv[0]} {len(argv)}\n")


@functools.lru_cache(maxsize=16)
def _template(
    root: str, folder: str, texts: tuple[tuple[str, str], ...], name: str
) -> jinja2.Template:
    """The template `name` of a scheduler whose templates are in `root`/`folder` (and `texts`),
    found once: a thousand job scripts look it up once (making its folders' paths is a large part
    of a render)."""
    folders = tuple(os.path.join(root, each) for each in (folder, NODE_PROBE_FOLDER) if each)
    return _templates(folders, texts).get_template(name)


@functools.lru_cache(maxsize=8)
def _templates(
    folders: tuple[str, ...], texts: tuple[tuple[str, str], ...] = ()
) -> jinja2.Environment:
    """The jinja2 environment of template texts and folders, made once: a thousand job scripts
    compile it once."""
    import shlex

    import jinja2

    loader = jinja2.ChoiceLoader(
        [jinja2.DictLoader(dict(texts)), jinja2.FileSystemLoader(list(folders))]
    )
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.filters["shquote"] = lambda value: shlex.quote(str(value))
    return env


def ask(*command: str, timeout: float = 30) -> str | None:
    """A site query's stdout (`sinfo`, `qstat -Q`), or None when the command is missing, fails or
    hangs: what `bench system detect`/`check` ask is answered or not, never a traceback."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


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
