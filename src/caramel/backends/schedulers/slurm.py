"""SLURM: job ids from what `sbatch` printed, job states from one `sacct` call per poll, `scancel`.

The do's of a JUBE-style step run on the login node (the local launcher) and submit with
`$submit $submit_script`; what makes a run a SLURM run is the job id the do printed. This module is
the only one that names SLURM's commands:

- one `sacct -j ID,ID,...` for every job the run waits on, however many (ReFrame's habit too);
  where accounting is off (`sacct` says so), one `squeue` instead;
- a query that fails or times out is tried once more and then counted as "nothing known":
  a scheduler hiccup never fails a workpackage;
- every call is appended to `$CARAMEL_SCHEDULER_LOG` when it is set, so tests count the calls;
- caramel's own job scripts (`submit: true`) are `templates/slurm/job.sh.j2`, submitted with
  `sbatch --parsable`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence

from caramel.backends.schedulers import JobState, Scheduler, register

_SUBMITTED = re.compile(rb"Submitted batch job (\d+)")
_PARSABLE = re.compile(rb"^(\d+)(?:;[\w.-]+)?\s*$", re.M)  # sbatch --parsable: "ID" or "ID;cluster"

# SLURM's job states, as caramel sees them: still to come, running, finished well, finished badly.
STATE_KIND = {
    "PENDING": "pending", "CONFIGURING": "pending", "REQUEUED": "pending", "REQUEUE_HOLD": "pending",
    "REQUEUE_FED": "pending", "RESV_DEL_HOLD": "pending", "SUSPENDED": "running", "STOPPED": "running",
    "RUNNING": "running", "COMPLETING": "running", "STAGE_OUT": "running", "SIGNALING": "running",
    "RESIZING": "running", "COMPLETED": "done",
    "FAILED": "failed", "TIMEOUT": "failed", "CANCELLED": "failed", "OUT_OF_MEMORY": "failed",
    "NODE_FAIL": "failed", "PREEMPTED": "failed", "BOOT_FAIL": "failed", "DEADLINE": "failed",
    "REVOKED": "failed", "SPECIAL_EXIT": "failed",
}
QUERY_TIMEOUT = 30.0  # seconds for one sacct/squeue call


def job_id_in(path: str, tail: int = 65536) -> str:
    """The last job id `sbatch` printed into `path` (plain or --parsable output); '' when none."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - tail))
            text = handle.read()
    except OSError:
        return ""
    found = [(m.start(), m.group(1)) for m in _SUBMITTED.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _PARSABLE.finditer(text)]
    return max(found)[1].decode() if found else ""


def _log_call(argv: Sequence[str]) -> None:
    path = os.environ.get("CARAMEL_SCHEDULER_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(f"{time.time():.3f} {argv[0]} {len(argv)}\n")


def call(argv: list[str], timeout: float = QUERY_TIMEOUT) -> subprocess.CompletedProcess | None:
    """Run a scheduler command; None when it could not run or did not answer in time."""
    _log_call(argv)
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _state_name(text: str) -> str:
    # sacct prints "CANCELLED by 0"; squeue may print "PREEMPTED" etc.
    return text.split()[0].rstrip("+") if text.strip() else ""


def _exit_code(text: str) -> int | None:
    code, _, signal = text.partition(":")
    if not code.isdigit():
        return None
    return 128 + int(signal) if signal.isdigit() and int(signal) and not int(code) else int(code)


def _job_state(name: str, exit_text: str, reason: str, nodes: str, end: str) -> JobState:
    kind = STATE_KIND.get(name, "running")
    code = _exit_code(exit_text)
    detail = name
    if name == "FAILED" and code is not None:
        detail += f" (signal {code - 128})" if exit_text.startswith("0:") and code > 128 else f" (exit {code})"
    if reason and reason not in ("None", "(null)"):
        detail += f": {reason}"
    ended = None
    if end and end not in ("Unknown", "None"):
        try:
            ended = time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            ended = None
    return JobState(kind, detail, exit_code=code, nodes=nodes, ended=ended)


def query_sacct(job_ids: list[str]) -> dict[str, JobState] | None:
    """States of `job_ids` from accounting; None when sacct cannot answer (then try squeue)."""
    argv = ["sacct", "-X", "-n", "-P", "-S", "1970-01-01", "-o", "JobIDRaw,State,ExitCode,Reason,NodeList,End",
            "-j", ",".join(job_ids)]
    for attempt in range(2):
        done = call(argv)
        if done is not None and done.returncode == 0:
            out: dict[str, JobState] = {}
            for line in done.stdout.splitlines():
                parts = line.split("|")
                if len(parts) >= 6:
                    out[parts[0]] = _job_state(_state_name(parts[1]), parts[2], parts[3], parts[4], parts[5])
            return out
        if done is not None and "accounting storage is disabled" in (done.stderr or "").lower():
            return None
        if attempt == 0:
            time.sleep(1.0)
    return {}  # failed twice: nothing known this poll, never a job failure


def query_squeue(job_ids: list[str]) -> dict[str, JobState]:
    """Without accounting: jobs squeue lists are pending/running/ending; a job it no longer lists
    (and that it listed before, i.e. that was submitted) has left the queue: 'gone'."""
    argv = ["squeue", "-h", "--states=all", "-o", "%i|%T|%r|%N", "-j", ",".join(job_ids)]
    for attempt in range(2):
        done = call(argv)
        if done is not None and done.returncode == 0:
            out = {}
            for line in done.stdout.splitlines():
                parts = line.split("|")
                if len(parts) >= 4:
                    out[parts[0]] = _job_state(_state_name(parts[1]), "", parts[2], parts[3], "")
            for job in job_ids:
                out.setdefault(job, JobState("gone", "no longer in the queue (accounting is off)"))
            return out
        if attempt == 0:
            time.sleep(1.0)
    return {}


@register("slurm")
class Slurm(Scheduler):
    commands = ("sbatch", "sacct", "scancel")
    template = "slurm"
    cancel_command = "scancel"

    def found_here(self) -> bool:
        return shutil.which("sbatch") is not None  # a login node: do's may submit here

    def submit_line(self, job_file: str) -> str:
        return f"sbatch --parsable {job_file}"

    def job_id_in(self, path: str) -> str:
        return job_id_in(path)

    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        """One scheduler query for all `job_ids` (two when accounting is off: sacct says so, squeue answers)."""
        ids = sorted({j for j in job_ids if j})
        if not ids or shutil.which("sacct") is None and shutil.which("squeue") is None:
            return {}
        if shutil.which("sacct") is not None:
            found = query_sacct(ids)
            if found is not None:
                return found
        return query_squeue(ids) if shutil.which("squeue") else {}

    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        """scancel every job; (ok, message)."""
        ids = sorted({j for j in job_ids if j})
        if not ids:
            return True, ""
        if shutil.which("scancel") is None:
            return False, "scancel is not on PATH"
        done = call(["scancel", *ids])
        if done is None:
            return False, "scancel did not answer"
        return done.returncode == 0, (done.stderr or done.stdout).strip()

    def site(self, job_ids: list[str]) -> str:
        """The SLURM cluster the first job ran on (accounting's Cluster)."""
        if not job_ids:
            return ""
        try:
            done = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "Cluster", "-j", job_ids[0]],
                                  capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip().splitlines()[0].strip() if done.stdout.strip() else ""
