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
  `sbatch --parsable`; a system's `scheduler_options` are further `#SBATCH` lines (`extra_sbatch`);
- what `bench system detect`/`check` ask the site: `sinfo` (partitions), `sacctmgr` (accounts).
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from caramel.adapters.backends.schedulers import JobState, Partition, Scheduler, ask, register
from caramel.adapters.backends.schedulers import log_call as _log_call
from caramel.errors import RunError
from caramel.vocabulary import JobStatus

_SUBMITTED = re.compile(rb"Submitted batch job (\d+(?:_\d+)?)")
# sbatch --parsable: "ID" or "ID;cluster"; caramel writes an array task's line as "ID_TASK"
_PARSABLE = re.compile(rb"^(\d+(?:_\d+)?)(?:;[\w.-]+)?\s*$", re.M)
_ARRAY_ID = re.compile(r"^(\d+)_(\d+|\[[^\]]*\])$")  # sacct/squeue: "123_4", "123_[5-9,12%4]"

# SLURM's job states, as caramel sees them: still to come, running, finished well, finished badly.
STATE_KIND = {
    "PENDING": "pending",
    "CONFIGURING": "pending",
    "REQUEUED": "pending",
    "REQUEUE_HOLD": "pending",
    "REQUEUE_FED": "pending",
    "RESV_DEL_HOLD": "pending",
    "SUSPENDED": "running",
    "STOPPED": "running",
    "RUNNING": "running",
    "COMPLETING": "running",
    "STAGE_OUT": "running",
    "SIGNALING": "running",
    "RESIZING": "running",
    "COMPLETED": "done",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "CANCELLED": "failed",
    "OUT_OF_MEMORY": "failed",
    "NODE_FAIL": "failed",
    "PREEMPTED": "failed",
    "BOOT_FAIL": "failed",
    "DEADLINE": "failed",
    "REVOKED": "failed",
    "SPECIAL_EXIT": "failed",
}
QUERY_TIMEOUT = 30.0  # seconds for one sacct/squeue call
SUBMIT_TIMEOUT = 120.0  # seconds for one sbatch of caramel's own (a busy controller answers slowly)


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


def query_ids(job_ids: list[str]) -> list[str]:
    """What to ask sacct/squeue for: a job's id, and an array task's array ("123_4" -> "123"), once:
    one query answers for every task of an array."""
    return sorted({job.split("_")[0] for job in job_ids}, key=lambda j: (len(j), j))


def task_ids(text: str) -> list[str]:
    """The array tasks a sacct/squeue JobID names: "123_4" -> ["123_4"]; "123_[0-2,7%4]" (tasks not
    yet started, listed together) -> ["123_0", "123_1", "123_2", "123_7"]; [] for a job that is no
    array task."""
    found = _ARRAY_ID.match(text.strip())
    if not found:
        return []
    array, tasks = found.groups()
    if not tasks.startswith("["):
        return [text.strip()]
    out = []
    for part in tasks.strip("[]").split("%")[0].split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            out += [f"{array}_{i}" for i in range(int(first), int(last or first) + 1)]
    return out


def call(
    argv: list[str], timeout: float = QUERY_TIMEOUT
) -> subprocess.CompletedProcess[str] | None:
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
    kind = JobStatus(STATE_KIND.get(name, "running"))
    code = _exit_code(exit_text)
    detail = name
    if name == "FAILED" and code is not None:
        detail += (
            f" (signal {code - 128})"
            if exit_text.startswith("0:") and code > 128
            else f" (exit {code})"
        )
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
    argv = [
        "sacct",
        "-X",
        "-n",
        "-P",
        "-S",
        "1970-01-01",
        "-o",
        "JobIDRaw,State,ExitCode,Reason,NodeList,End,JobID",
        "-j",
        ",".join(query_ids(job_ids)),
    ]
    for attempt in range(2):
        done = call(argv)
        if done is not None and done.returncode == 0:
            return _sacct_states(done.stdout)
        if done is not None and "accounting storage is disabled" in (done.stderr or "").lower():
            return None
        if attempt == 0:
            time.sleep(1.0)
    return {}  # failed twice: nothing known this poll, never a job failure


def _sacct_states(text: str) -> dict[str, JobState]:
    """The states in sacct's `JobIDRaw|State|ExitCode|Reason|NodeList|End|JobID` lines, each under
    its job id, or under each task id of an array's line."""
    out: dict[str, JobState] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 6:
            state = _job_state(_state_name(parts[1]), parts[2], parts[3], parts[4], parts[5])
            for job in task_ids(parts[6] if len(parts) > 6 else "") or [parts[0]]:
                out[job] = state
    return out


def query_squeue(job_ids: list[str]) -> dict[str, JobState]:
    """Without accounting: jobs squeue lists are pending/running/ending; a job it no longer lists
    (and that it listed before, i.e. that was submitted) has left the queue: 'gone'."""
    argv = ["squeue", "-h", "--states=all", "-o", "%i|%T|%r|%N", "-j", ",".join(query_ids(job_ids))]
    for attempt in range(2):
        done = call(argv)
        if done is not None and done.returncode == 0:
            out = {}
            for line in done.stdout.splitlines():
                parts = line.split("|")
                if len(parts) >= 4:
                    for job in task_ids(parts[0]) or [parts[0]]:
                        out[job] = _job_state(_state_name(parts[1]), "", parts[2], parts[3], "")
            for job in job_ids:
                out.setdefault(
                    job, JobState(JobStatus.GONE, "no longer in the queue (accounting is off)")
                )
            return out
        if attempt == 0:
            time.sleep(1.0)
    return {}


def time_text(seconds: float) -> str:
    """A time limit as SLURM's --time takes it (whole minutes are too coarse: [D-]HH:MM:SS)."""
    whole = max(1, int(-(-seconds // 1)))
    days, rest = divmod(whole, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def partitions() -> list[Partition]:
    """The partitions `sinfo` lists (the first node group of a partition stands for it)."""
    found: dict[str, Partition] = {}
    for line in (ask("sinfo", "-h", "-o", "%P|%c|%m|%G|%l|%D") or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6:
            continue
        name, cpus, mem, gres, limit, nodes = parts
        default = name.endswith("*")
        name = name.rstrip("*")
        if name not in found:
            found[name] = Partition(
                name,
                default,
                _int(cpus),
                _int(mem),
                "" if gres == "(null)" else gres,
                limit,
                _int(nodes),
            )
    return list(found.values())


def _int(text: str) -> int:
    match = re.match(r"\d+", text.strip())
    return int(match.group(0)) if match else 0


@register("slurm")
class Slurm(Scheduler):
    commands = ("sbatch", "sacct", "scancel")
    site_commands = ("sinfo", "sacctmgr")
    template = "slurm"
    cancel_command = "scancel"
    parallel_launcher = "srun"

    def __init__(self) -> None:
        self._max_array_size: int | None = None

    def found_here(self) -> bool:
        return shutil.which("sbatch") is not None  # a login node: do's may submit here

    def submit_line(self, job_file: str) -> str:
        return f"sbatch --parsable {job_file}"

    def time_text(self, seconds: float) -> str:
        return time_text(seconds)

    def job_script(self, values: dict[str, Any], template: str = "job.sh.j2") -> str:
        # `extra_sbatch`: the name templates written before `scheduler_options` use
        return super().job_script(
            {**values, "extra_sbatch": values.get("scheduler_options", [])}, template
        )

    def partitions(self) -> list[Partition]:
        return partitions()

    def user_accounts(self) -> list[str]:
        out = ask(
            "sacctmgr", "-n", "-P", "show", "assoc", f"user={getpass.getuser()}", "format=account"
        )
        return [a.strip() for a in (out or "").splitlines() if a.strip()]

    def check_partition(self, partition: str) -> tuple[bool, str] | None:
        known = [p.name for p in partitions()]
        return (
            (True, "listed by sinfo")
            if partition in known
            else (False, "sinfo lists: " + (", ".join(known) or "nothing"))
        )

    def check_account(self, account: str) -> tuple[bool, str] | None:
        listed = ask("sacctmgr", "-n", "-P", "show", "account", account, "format=account")
        found = bool(listed and account in listed.split())
        return found, "known to sacctmgr" if found else "sacctmgr does not know it"

    def job_id_in(self, path: str) -> str:
        return job_id_in(path)

    def submit(
        self,
        job_file: str,
        cwd: str,
        array: str = "",
        after: Sequence[str] = (),
        corresponding: bool = False,
    ) -> str:
        argv = ["sbatch", "--parsable"] + ([f"--array={array}"] if array else [])
        if after:
            argv.append(
                f"--dependency={'aftercorr' if corresponding else 'afterok'}:" + ":".join(after)
            )
        _log_call(argv)
        try:
            done = subprocess.run(
                [*argv, job_file], cwd=cwd, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RunError(f"sbatch did not answer: {exc}") from None
        found: list[bytes] = _PARSABLE.findall(done.stdout.encode())
        if done.returncode or not found:
            words = (done.stderr or done.stdout).strip().splitlines()
            raise RunError(
                f"sbatch refused {os.path.join(cwd, job_file)}: "
                + (words[-1] if words else f"exit {done.returncode}")
            )
        return found[-1].decode()

    def max_array_size(self) -> int:
        """SLURM's MaxArraySize (`scontrol show config`; 1001 when it cannot say, SLURM's
        default)."""
        if self._max_array_size is None:
            done = call(["scontrol", "show", "config"]) if shutil.which("scontrol") else None
            found = re.search(
                r"^MaxArraySize\s*=\s*(\d+)",
                done.stdout if done and not done.returncode else "",
                re.M,
            )
            self._max_array_size = int(found.group(1)) if found else 1001
        return self._max_array_size

    def array_directives(self, script: str) -> tuple[str, ...]:
        """The job script's `#SBATCH` lines but those that are each job's own (name, output,
        error)."""
        own = ("--job-name", "-J", "--output", "-o", "--error", "-e")
        lines = [line.strip() for line in script.splitlines() if line.startswith("#SBATCH")]
        return tuple(
            line
            for line in lines
            if not line.split()[1:2] or line.split()[1].split("=")[0] not in own
        )

    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        """One scheduler query for all `job_ids` (two when accounting is off: sacct says so, squeue
        answers)."""
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
            done = subprocess.run(
                ["sacct", "-X", "-n", "-P", "-o", "Cluster", "-j", job_ids[0]],
                capture_output=True,
                text=True,
                timeout=15,
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip().splitlines()[0].strip() if done.stdout.strip() else ""
