"""Steps that are batch jobs (`submit="true"`): the do's become a job script, rendered from the
run's scheduler's template (`templates/slurm/job.sh.j2` for SLURM), written into the work folder and
submitted with the scheduler's submit line (backends.schedulers owns both).

The job's resources are the workpackage's parameters under the names JUBE's platform uses
(`nodes`, `taskspernode`, `threadspertask`, `timelimit`, `queue`, `account`, `gres`), so a file
written for JUBE's platform keeps its parameters; what a file does not set comes from the
system file the tag selected, then from the scheduler's defaults. The script writes the done file
when every do succeeded; a failing do ends the job with its exit code, which the scheduler reports.
"""

from __future__ import annotations

import os

from caramel.adapters.backends import Scheduler, schedulers
from caramel.stages.engine.script import Command
from caramel.stages.expand import layout
from caramel.stages.spec.model import Benchmark, Step

DONE_FILE = "caramel.done"
JOB_FILE = "caramel_job.sh"
FINGERPRINT_FILE = layout.FINGERPRINT_FILE
_END = "CARAMEL_JOB_SCRIPT_END"


def resources(
    bench: Benchmark,
    params: dict[str, str],
    time_limit: float = 0.0,
    scheduler: Scheduler | None = None,
) -> dict[str, object]:
    """The job's resources: the workpackage's JUBE-named parameters, else the system's values. The
    step's time limit (caramel's `timeout`) becomes the job's --time unless `timelimit` is set."""
    system = bench.system
    scheduler = scheduler or schedulers.for_system(system)

    facts: dict[str, object] = (
        {}
        if system is None
        else {
            "nodes": system.nodes,
            "tasks_per_node": system.tasks_per_node,
            "cpus_per_task": system.cpus_per_task,
            "time_limit": system.time_limit,
            "partition": system.partition,
            "account": system.account,
            "gres": system.gres,
        }
    )

    def pick(param: str, fact: str, default: object = "") -> object:
        if params.get(param, "").strip():
            return params[param].strip()
        value = facts.get(fact)
        return value if value not in (None, "") else default

    return {
        "nodes": pick("nodes", "nodes", 1),
        "tasks_per_node": pick("taskspernode", "tasks_per_node", 1),
        "cpus_per_task": pick("threadspertask", "cpus_per_task", 1),
        "time_limit": (
            params["timelimit"].strip()
            if params.get("timelimit", "").strip()
            else scheduler.time_text(time_limit)
            if time_limit > 0
            else pick("timelimit", "time_limit")
        ),
        "partition": pick("queue", "partition"),
        "account": pick("account", "account"),
        "gres": pick("gres", "gres"),
    }


def render(
    bench: Benchmark,
    step: Step,
    params: dict[str, str],
    body: list[str],
    work: str,
    time_limit: float = 0.0,
    scheduler: Scheduler | None = None,
) -> str:
    system = bench.system
    scheduler = scheduler or schedulers.for_system(system)
    launcher = (
        " ".join(x for x in (system.launcher, system.launcher_args) if x)
        if system is not None
        else ""
    )
    values = dict(
        resources(bench, params, time_limit, scheduler),
        wp_id=params.get("jube_wp_id", "?"),
        step=step.name,
        benchmark=bench.name,
        job_name=f"{bench.name}.{step.name}.{params.get('jube_wp_id', '0')}",
        job_out=os.path.join(work, "job.out"),
        job_err=os.path.join(work, "job.err"),
        scheduler_options=list(system.scheduler_options) if system is not None else [],
        modules=list(system.modules) if system is not None else [],
        env=dict(system.env) if system is not None else {},
        system=system.name if system is not None else "none",
        launcher=launcher,
        body="\n".join(body),
        done_file=os.path.join(work, DONE_FILE),
        fingerprint_file=os.path.join(work, FINGERPRINT_FILE),
    )
    return scheduler.job_script(values)


def submit_command(
    bench: Benchmark,
    step: Step,
    params: dict[str, str],
    body: list[str],
    work: str,
    time_limit: float = 0.0,
    queue_later: bool = False,
) -> Command:
    """One command that writes the job script and submits it; the workpackage then waits for the
    done file while its job is followed through the scheduler. `queue_later`: the command only
    writes the script, and the engine queues it (engine.arrays: a job array, or after its parents'
    jobs)."""
    scheduler = schedulers.for_system(bench.system)
    submit = scheduler.submit_line(JOB_FILE)  # first: a run without a batch scheduler says so here
    script = render(bench, step, params, body, work, time_limit, scheduler)
    text = f"cat > {JOB_FILE} <<'{_END}'\n{script}{_END}" + ("" if queue_later else f"\n{submit}")
    return Command(
        0,
        0,
        text,
        work,
        os.path.join(work, "stdout"),
        os.path.join(work, "stderr"),
        done_file=os.path.join(work, DONE_FILE),
    )


def written_script(command: Command) -> str:
    """The job script a `queue_later` submit command writes (the text of its here-document)."""
    head, _, rest = command.text.partition("\n")
    if not head.startswith(f"cat > {JOB_FILE} ") or not rest.endswith(_END):
        raise ValueError(f"not a command that only writes {JOB_FILE}")
    return rest[: -len(_END)]
