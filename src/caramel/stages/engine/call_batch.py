"""A `call:` step on SLURM as one job array, through submitit's batch submission.

Each workpackage's start writes its call (`call.json`: the target, its keyword arguments, submitit's
parameters from the system file) into its work folder and waits, as a submit step's job script is
written for an array (engine.arrays). Once nothing else can start, engine.arrays hands the step's
waiting workpackages to `submit`: one `executor.batch()` of submitit's SlurmExecutor, so one sbatch
queues them all as one job array, split where the site's arrays are smaller (MaxArraySize);
`array: N` on the step is submitit's `array_parallelism` (at most N tasks at once), `array: false`
submits one job per workpackage (engine/call_job.py run by the workpackage's command).

Each task runs its workpackage's CallPayload (engine/call_payload.py): the function's figures are
written as JSON and lines in the work folder (caramel never unpickles what a job wrote), a function
that raises writes `call.error`, its exception's last line. The tasks' states come from the one
sacct query per poll (ids `123_4`); submitit's own files are in the array's folder
(`<run>/.caramel_arrays/<step>.<n>/submitit/`), its task map beside them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import TYPE_CHECKING

from caramel.stages.engine.call import call_in
from caramel.stages.engine.script import Command, Outcome, Ran, Status
from caramel.stages.spec.call import CALL_FILE
from caramel.stages.spec.model import Benchmark

if TYPE_CHECKING:
    from caramel.stages.engine.interface import EngineInterface
    from caramel.stages.state.rows import WpRow


class SubmitError(Exception):
    """submitit could not queue the batch (sbatch refused it, or did not answer)."""


def on_slurm(bench: Benchmark) -> bool:
    """Whether the run's system submits call: steps to SLURM (engine/call.py: its scheduler)."""
    scheduler = bench.system.scheduler if bench.system is not None else ""
    return (scheduler or "local") == "slurm"


def write_call(command: Command) -> Outcome:
    """What the call step's command does before it submits, here rather than in a process of its
    own: the last attempt's figures removed, the call written (`call.json`); then it waits for its
    batch."""
    from caramel.stages.engine.call_job import FIGURE_FILES

    started = time.time()
    try:
        call = call_in(command)
        for name in FIGURE_FILES:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(command.cwd, name))
        with open(os.path.join(command.cwd, call.get("file", CALL_FILE)), "w") as handle:
            json.dump(call, handle, indent=1, sort_keys=True)
        open(
            command.stdout, "w"
        ).close()  # a job id an earlier attempt left there is not this one's
    except (OSError, ValueError) as exc:
        with open(command.stderr, "a") as handle:
            handle.write(f"caramel: cannot write {CALL_FILE}: {exc}\n")
        return Outcome(Status.FAILED, index=0, exit_code=1, ran=[Ran(0, started, time.time(), 1)])
    return Outcome(Status.WAITING, index=0, exit_code=0, ran=[Ran(0, started, time.time(), 0)])


def submit(engine: EngineInterface, wps: list[WpRow], folder: str, most: int) -> list[str]:
    """Queue the calls of `wps` (their work folders' call.json) as one batch of submitit whose files
    are in `folder`; the job id of each, in order ("123_4"; "123" for a batch of one)."""
    from caramel.adapters.backends import schedulers
    from caramel.stages.engine.call_job import submit_batch

    calls = []
    for wp in wps:
        work = os.path.dirname(wp.wait_files["done"])
        try:
            with open(os.path.join(work, CALL_FILE)) as handle:
                calls.append((json.load(handle), work))
        except (OSError, ValueError) as exc:
            raise SubmitError(f"cannot read the call of workpackage {wp.id}: {exc}") from None
    submit = schedulers.get("slurm").commands[
        0
    ]  # submitit runs SLURM's submit command; its module names it
    schedulers.log_call(
        [submit, f"--array=0-{len(calls) - 1}" + (f"%{most}" if most else ""), "(submitit batch)"]
    )
    try:
        return submit_batch(calls, folder, most)
    except (
        Exception
    ) as exc:  # submitit's own errors, sbatch's refusal: every workpackage of the batch fails
        lines = [line for line in str(exc).strip().splitlines() if line.strip()]
        raise SubmitError(
            f"submitit: {type(exc).__name__}: {lines[-1] if lines else ''}".rstrip(": ")
        ) from None
