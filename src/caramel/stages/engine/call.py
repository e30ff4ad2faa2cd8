"""The one do of a `call:` step (spec/call.py): hand the function and its arguments to submitit.

A call step's workpackage runs one command, `python -m caramel.stages.engine.call_job '<call>'`,
whose argument is the call as JSON: the target, the workpackage's typed parameters (the keyword
arguments), the scheduler and the executor's parameters the system file gives. So a call step is
recorded, logged, timed, wrapped and cancelled like any do. On a system without a scheduler that
command waits for submitit's local job and ends with it; on SLURM it submits the job, prints its id
as sbatch does and ends at once, and the workpackage waits for the payload's done file
(`call.done`) like a submit step's (engine.waiting), failing on `call.error`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any  # a call is JSON: its kwargs are the function's

from caramel.stages.engine.script import Command, Outcome, Status
from caramel.stages.engine.tails import tail
from caramel.stages.expand.params import Params
from caramel.stages.spec.call import CALL_FILE
from caramel.stages.spec.model import Benchmark, Step
from caramel.stages.spec.system import SystemFacts
from caramel.vocabulary import Role

CALL_MODULE = "caramel.stages.engine.call_job"  # the module a call step's one do runs
DONE_FILE, ERROR_FILE = (
    "call.done",
    "call.error",
)  # what the payload writes at the end of a scheduled job
LOCAL_FOREVER_MIN = (
    7 * 24 * 60.0
)  # submitit's local time limit when the step has none (its default is 2 min)


def call_command(
    bench: Benchmark, step: Step, params: Params, work: str, time_limit: float = 0.0
) -> Command:
    """The command that runs `step.call` for one workpackage, in its work folder."""
    system = bench.system
    scheduler = (system.scheduler if system is not None else "") or "local"
    call = {
        "target": step.call,
        "home": os.path.abspath(bench.home),
        "kwargs": params.typed_values(),
        "scheduler": scheduler,
        "executor": executor_parameters(system, time_limit, f"{bench.name}.{step.name}"),
        "file": CALL_FILE,
        "where": str(step.call_where),
        "energy": system.energy_method if system is not None else "",
        "system": system.name if system is not None else "",
    }
    text = (
        f"{shlex.quote(sys.executable)} -m {CALL_MODULE} "
        f"{shlex.quote(json.dumps(call, sort_keys=True))}"
    )
    waits = scheduler != "local"
    return Command(
        0,
        0,
        text,
        work,
        os.path.join(work, "stdout"),
        os.path.join(work, "stderr"),
        Role.DO,
        os.path.join(work, DONE_FILE) if waits else "",
        os.path.join(work, ERROR_FILE) if waits else "",
    )


def call_in(command: Command) -> dict[str, Any]:
    """The call a `call_command` carries (its last word, JSON): what engine.call_batch writes and
    submits."""
    call = json.loads(shlex.split(command.text)[-1])
    if not isinstance(call, dict):
        raise ValueError(f"not a call command: {command.text[:80]}")
    return call


def call_failure(outcome: Outcome, commands: list[Command]) -> str:
    """Why a call step's do failed, as its rows and the run's summary give it: `call TARGET: ` and
    the last line it wrote on stderr (call_job writes the exception's last line there, or why the
    job gave no figures); '' for any other failure (a shell do, a signal, a time limit: the
    script's reason, engine.script.failure_reason, says it)."""
    if outcome.status != Status.FAILED or outcome.index is None or not (outcome.exit_code or 0) > 0:
        return ""
    command = commands[outcome.index]
    if f" -m {CALL_MODULE} " not in command.text:
        return ""
    said = tail(command.stderr, lines=1)
    if not said:
        return ""
    try:
        target = call_in(command).get("target", "")
    except ValueError:
        return ""
    return f"call {target}: {said}"


def executor_parameters(
    system: SystemFacts | None, time_limit: float, job_name: str = "caramel"
) -> dict[str, object]:
    """submitit's parameters from the system file: partition, account, GPUs, tasks, time limit
    (minutes)."""
    minutes = (
        time_limit / 60.0
        if time_limit > 0
        else _minutes(system.time_limit if system is not None else "")
    )
    if system is None or system.scheduler == "local":
        return {"timeout_min": minutes or LOCAL_FOREVER_MIN}
    out: dict[str, object] = {
        "job_name": job_name,
        "nodes": system.nodes,
        "ntasks_per_node": system.tasks_per_node,
        "cpus_per_task": system.cpus_per_task,
    }
    if minutes:
        out["time"] = max(1, int(round(minutes)))
    if system.partition:
        out["partition"] = system.partition
    if system.account:
        out["account"] = system.account
    if system.gpus_per_node:
        out["gpus_per_node"] = system.gpus_per_node
    return out


def _minutes(text: str) -> float:
    """A SLURM time ([D-]HH:MM:SS, MM:SS, MM) in minutes; 0 when empty or unreadable."""
    text = (text or "").strip()
    if not text:
        return 0.0
    days, _, rest = text.rpartition("-") if "-" in text else ("0", "", text)
    try:
        parts = [float(p) for p in rest.split(":")]
        day_count = float(days or 0)
    except ValueError:
        return 0.0
    seconds: dict[int, Callable[[list[float]], float]] = {
        1: lambda p: p[0] * 60,
        2: lambda p: p[0] * 60 + p[1],
        3: lambda p: p[0] * 3600 + p[1] * 60 + p[2],
    }
    if len(parts) not in seconds:
        return 0.0
    return (day_count * 86400 + seconds[len(parts)](parts)) / 60.0
