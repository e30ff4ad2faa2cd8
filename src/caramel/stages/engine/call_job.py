"""`python -m caramel.stages.engine.call_job '<call as JSON>'`: the do of a `call:` step
(engine/call.py).

It runs in the workpackage's work folder, records the call (`call.json`), and submits a
`CallPayload` through submitit: its LocalExecutor where the system has no scheduler (then it
waits for the job and exits 0 when the function's figures were written, 1 with the exception's
last line on stderr when it raised), its SlurmExecutor on SLURM (then it prints
`Submitted batch job ID` and exits; the workpackage waits for the payload's done file).
submitit's own files (its pickles and the job's output) are kept in `submitit/`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any  # a call is JSON (engine.call.call_in)

if TYPE_CHECKING:
    from submitit import Job

from caramel.payloads.call import CallPayload, CheckpointedCallPayload, resolve

SUBMITIT_FOLDER = "submitit"
FIGURE_FILES = ("figures.json", "figures.txt", "call.done", "call.error")


def payload_of(call: Mapping[str, Any], work: str) -> CallPayload:
    """The payload that runs the call in its job (one that checkpoints where the function can)."""
    function = resolve(call["target"], call.get("home", ""))
    scheduled = call["scheduler"] != "local"
    payload_class = (
        CheckpointedCallPayload if callable(getattr(function, "checkpoint", None)) else CallPayload
    )
    return payload_class(
        call["target"],
        call.get("home", ""),
        call["kwargs"],
        work,
        call.get("where", ""),
        os.path.join(work, "call.done") if scheduled else "",
        os.path.join(work, "call.error") if scheduled else "",
        call.get("energy", ""),
        call.get("system", ""),
    )


def submit(call: Mapping[str, Any], work: str) -> tuple[Job[int], bool]:
    """Submit the call's payload; (the submitit job, whether it is a local job to wait for)."""
    import submitit

    payload = payload_of(call, work)
    folder = os.path.join(work, SUBMITIT_FOLDER, "%j")
    if call["scheduler"] == "local":
        executor: submitit.Executor = submitit.LocalExecutor(folder=folder)
    elif call["scheduler"] == "slurm":
        executor = submitit.SlurmExecutor(folder=folder, python=sys.executable)
    else:
        raise ValueError(
            f"caramel runs a call: step on a local or a SLURM system, not on {call['scheduler']!r}"
        )
    executor.update_parameters(**call.get("executor", {}))
    return executor.submit(payload), call["scheduler"] == "local"


def submit_batch(
    calls: list[tuple[Mapping[str, Any], str]], folder: str, most: int = 0
) -> list[str]:
    """Submit (call, work folder) pairs of one step as one batch of submitit's SlurmExecutor: one
    sbatch, a job array of len(calls) tasks with at most `most` at once (0: all); each task's job
    id."""
    import submitit

    executor = submitit.SlurmExecutor(
        folder=os.path.join(folder, SUBMITIT_FOLDER, "%j"), python=sys.executable
    )
    executor.update_parameters(
        **calls[0][0].get("executor", {}), array_parallelism=most or len(calls)
    )
    with executor.batch():
        jobs = [executor.submit(payload_of(call, work)) for call, work in calls]
    return [str(job.job_id) for job in jobs]


def wait_local(job: Job[int], work: str, poll: float = 0.1) -> int:
    """Wait for a local job; its exit status as the function's outcome (from figures.json only)."""
    while not job.done():
        time.sleep(poll)
    try:
        with open(os.path.join(work, "figures.json")) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        print(
            f"the job ended without writing figures.json (see {SUBMITIT_FOLDER}/{job.job_id}/ for "
            "its output): "
            f"{_tail(job)}",
            file=sys.stderr,
        )
        return 1
    if record.get("status") == "done":
        for name, value in record.get("figures", {}).items():
            print(f"{name} = {value}")
        return 0
    print(record.get("error", "the function failed"), file=sys.stderr)
    return 1


def _tail(job: Job[int]) -> str:
    """The last line of the job's stderr (submitit's log), for a job that died before writing its
    figures."""
    try:
        with open(job.paths.stderr, errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except (OSError, AttributeError):
        return "no output"
    return lines[-1] if lines else "no output"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m caramel.stages.engine.call_job '<call as JSON>'", file=sys.stderr)
        return 2
    call = json.loads(argv[0])
    work = os.getcwd()
    for name in FIGURE_FILES:  # a new attempt: nothing of the last one counts
        if os.path.exists(name):
            os.unlink(name)
    with open(call.get("file", "call.json"), "w") as handle:
        json.dump(call, handle, indent=1, sort_keys=True)
    try:
        job, local = submit(call, work)
    except Exception as exc:
        print(f"cannot submit {call.get('target')}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if local:
        return wait_local(job, work)
    print(f"Submitted batch job {job.job_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
