"""PBS (OpenPBS, PBS Pro): job scripts with `#PBS` lines submitted with `qsub`, the states of every
waiting job from one `qstat -x -f -F json` per poll, `qdel`; the site's queues from `qstat -Q`.

This module is the whole of PBS in caramel (docs/backends.md walks through it): registered as `pbs`,
a system file saying `scheduler: pbs` runs its `submit: true` steps through it. Its job script
template is the text below (no file in templates/ needed). What it leaves to SLURM's module: job
arrays (`qsub -J`) are refused with a clear error; accounts are not listed (PBS keeps none of its
own).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from caramel.adapters.backends.schedulers import JobState, Partition, Scheduler, ask, register
from caramel.errors import RunError
from caramel.vocabulary import JobStatus

QUERY_TIMEOUT = 30.0  # seconds for one qstat
SUBMIT_TIMEOUT = 120.0  # seconds for one qsub
_JOB_ID = re.compile(r"^(\d+(?:\[\d*\])?\.[\w.-]+)\s*$", re.M)  # what qsub prints: "1234.server"

# PBS's job_state letters, as caramel sees them; F (finished) is done or failed by its Exit_status.
_P, _R = JobStatus.PENDING, JobStatus.RUNNING
STATE_KIND = {
    "Q": _P,
    "H": _P,
    "W": _P,
    "T": _P,
    "M": _P,
    "R": _R,
    "E": _R,
    "S": _R,
    "U": _R,
    "B": _R,
    "X": JobStatus.FAILED,
}
STATE_NAME = {
    "Q": "QUEUED",
    "H": "HELD",
    "W": "WAITING",
    "T": "TRANSITING",
    "M": "MOVED",
    "R": "RUNNING",
    "E": "EXITING",
    "S": "SUSPENDED",
    "U": "SUSPENDED",
    "B": "RUNNING",
    "X": "EXPIRED",
    "F": "FINISHED",
}

JOB_SCRIPT = """\
#!/bin/bash
# Job script of workpackage {{ wp_id }} (step {{ step }}) of benchmark {{ benchmark }}, written\
 by caramel.
#PBS -N {{ job_name }}
#PBS -l select={{ nodes }}:ncpus={{ ncpus }}:mpiprocs={{ tasks_per_node }}\
{% if ngpus %}:ngpus={{ ngpus }}{% endif %}
{% if time_limit %}#PBS -l walltime={{ time_limit }}
{% endif %}{% if partition %}#PBS -q {{ partition }}
{% endif %}{% if account %}#PBS -A {{ account }}
{% endif %}#PBS -o {{ job_out }}
#PBS -e {{ job_err }}
{% for line in scheduler_options %}#PBS {{ line }}
{% endfor %}
# PBS starts a job in the home folder: the do's run where qsub was called (the work folder)
cd "${PBS_O_WORKDIR:-.}" || exit 1
{% for module in modules %}module load {{ module }}
{% endfor %}{% for name, value in env.items() %}export {{ name }}={{ value | shquote }}
{% endfor %}# the launcher and flags of system {{ system }}: `$CARAMEL_LAUNCHER cmd` starts a\
 task per rank
export CARAMEL_LAUNCHER={{ launcher | shquote }}

# What the job's node is made of: bench result reads it into the history.
(
{% include "fingerprint.sh" %}
) > {{ fingerprint_file | shquote }} 2>/dev/null || true

# The step's do's, in order; the first that fails ends the job with its exit code (qstat's\
 Exit_status).
(
set -e
{{ body }}
)
rc=$?
if [ "$rc" -eq 0 ]; then touch {{ done_file | shquote }}; fi
exit "$rc"
"""


def job_id_in(path: str, tail: int = 65536) -> str:
    """The last job id qsub printed into `path` ("1234.server"); '' when none."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - tail))
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    found = _JOB_ID.findall(text)
    return found[-1] if found else ""


def _number(job_id: str) -> str:
    return job_id.split(".")[0]


def _ended(text: str) -> float | None:
    try:
        return time.mktime(time.strptime(text, "%a %b %d %H:%M:%S %Y"))
    except (TypeError, ValueError):
        return None


def job_state(fields: dict[str, Any]) -> JobState:
    """One job of `qstat -x -f -F json` as caramel sees it."""
    letter = str(fields.get("job_state", ""))
    nodes = _nodes(str(fields.get("exec_host", "")))
    ended = _ended(str(fields.get("mtime", ""))) if letter in ("F", "X") else None
    if letter != "F":
        comment = str(fields.get("comment", ""))
        reason = STATE_NAME.get(letter, letter) + (
            f": {comment}" if comment and letter in "QHW" else ""
        )
        return JobState(STATE_KIND.get(letter, JobStatus.RUNNING), reason, nodes=nodes, ended=ended)
    code = fields.get("Exit_status")
    if not isinstance(code, int):
        return JobState(
            JobStatus.FAILED, "FINISHED without an exit status", nodes=nodes, ended=ended
        )
    if code == 0:
        return JobState(JobStatus.DONE, "FINISHED", exit_code=0, nodes=nodes, ended=ended)
    return JobState(JobStatus.FAILED, _failure(code), exit_code=code, nodes=nodes, ended=ended)


def _nodes(exec_host: str) -> str:
    """The hosts of `exec_host` (`n1/0*2+n2/0`), each once, in order: `n1,n2`."""
    return ",".join(dict.fromkeys(part.split("/")[0] for part in exec_host.split("+") if part))


def _failure(code: int) -> str:
    """A finished job's nonzero Exit_status in words: above 256 the job was killed by signal
    N-256 (qdel, walltime); below 0 it never ran."""
    if code > 256:
        return f"KILLED (signal {code - 256})"
    return f"NOT RUN (Exit_status {code})" if code < 0 else f"FAILED (exit {code})"


def states_from_json(text: str, job_ids: list[str]) -> dict[str, JobState]:
    """The states of `job_ids` in what `qstat -x -f -F json` printed (a job is found by its full id
    or its number: servers differ in the suffix they print); a job it leaves out is left out."""
    try:
        jobs = json.loads(text).get("Jobs", {})
    except (ValueError, AttributeError):
        return {}
    by_number = {_number(job): fields for job, fields in jobs.items() if isinstance(fields, dict)}
    out = {}
    for job in job_ids:
        fields = jobs.get(job) if isinstance(jobs.get(job), dict) else by_number.get(_number(job))
        if fields is not None:
            out[job] = job_state(fields)
    return out


def call(
    argv: list[str], timeout: float = QUERY_TIMEOUT, cwd: str | None = None
) -> subprocess.CompletedProcess[str] | None:
    """Run a PBS command; None when it could not run or did not answer in time."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None


@functools.cache
def _is_pbs(qstat: str | None) -> bool:
    """Whether the qstat at that path is PBS's (SLURM sites may carry Torque-style qsub/qstat
    wrappers): asked once a process for each qstat."""
    return qstat is not None and "pbs_version" in (ask(qstat, "--version", timeout=10) or "")


def _resources(queue: dict[str, Any]) -> dict[str, Any]:
    found = queue.get("resources_max")
    return found if isinstance(found, dict) else {}


def _int(value: Any) -> int:
    match = re.match(r"\d+", str(value or ""))
    return int(match.group(0)) if match else 0


def _megabytes(value: Any) -> int:
    """PBS's size text ("192gb", "512mb", "1024kb") in MB."""
    match = re.match(r"(\d+)\s*([kmgt]?)b?$", str(value or "").strip().lower())
    if not match:
        return 0
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[match.group(2)]
    return int(match.group(1)) * factor // 1024**2


def queues() -> list[Partition]:
    """The execution queues `qstat -Q -f -F json` lists, the server's default queue marked."""
    try:
        listed = json.loads(ask("qstat", "-Q", "-f", "-F", "json") or "{}").get("Queue", {})
        server = json.loads(ask("qstat", "-B", "-f", "-F", "json") or "{}").get("Server", {})
    except (ValueError, AttributeError):
        return []
    default = next(
        (str(s.get("default_queue", "")) for s in server.values() if isinstance(s, dict)), ""
    )
    out = []
    for name, queue in listed.items():
        if not isinstance(queue, dict) or queue.get("queue_type", "Execution") != "Execution":
            continue
        limits = _resources(queue)
        ngpus = _int(limits.get("ngpus"))
        out.append(
            Partition(
                name,
                name == default,
                _int(limits.get("ncpus")),
                _megabytes(limits.get("mem")),
                f"gpu:{ngpus}" if ngpus else "",
                str(limits.get("walltime", "")),
                _int(limits.get("nodect")),
            )
        )
    return out


@register("pbs")
class Pbs(Scheduler):
    commands = ("qsub", "qstat", "qdel")
    site_commands = ("qstat",)
    cancel_command = "qdel"
    script_templates = {"job.sh.j2": JOB_SCRIPT}
    parallel_launcher = "mpiexec"

    def found_here(self) -> bool:
        return not self.missing() and _is_pbs(shutil.which("qstat"))

    def submit_line(self, job_file: str) -> str:
        return f"qsub {job_file}"

    def job_id_in(self, path: str) -> str:
        return job_id_in(path)

    def job_script(self, values: dict[str, Any], template: str = "job.sh.j2") -> str:
        gpus = re.search(r"gpu(?::[\w.-]+)?:(\d+)", str(values.get("gres", "")))
        ncpus = _int(values.get("tasks_per_node")) * _int(values.get("cpus_per_task")) or 1
        return super().job_script(
            {**values, "ngpus": int(gpus.group(1)) if gpus else 0, "ncpus": ncpus}, template
        )

    def submit(
        self,
        job_file: str,
        cwd: str,
        array: str = "",
        after: Sequence[str] = (),
        corresponding: bool = False,
    ) -> str:
        if array or corresponding:
            raise RunError(
                "PBS job arrays (qsub -J) are not supported by caramel's pbs scheduler",
                hint="remove array: from the step (or job_array: from the system file)",
            )
        argv = ["qsub", *(["-W", "depend=afterok:" + ":".join(after)] if after else []), job_file]
        done = call(argv, SUBMIT_TIMEOUT, cwd=cwd)
        if done is None:
            raise RunError(f"qsub did not answer for {os.path.join(cwd, job_file)}")
        found: list[str] = _JOB_ID.findall(done.stdout)
        if done.returncode or not found:
            words = (done.stderr or done.stdout).strip().splitlines()
            raise RunError(
                f"qsub refused {os.path.join(cwd, job_file)}: "
                + (words[-1] if words else f"exit {done.returncode}")
            )
        return found[-1]

    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        """One `qstat -x -f -F json` for all `job_ids` (-x: finished jobs too, while the server
        keeps them)."""
        ids = sorted({j for j in job_ids if j})
        if not ids:
            return {}
        done = call(["qstat", "-x", "-f", "-F", "json", *ids])
        return (
            states_from_json(done.stdout, ids) if done is not None and done.stdout.strip() else {}
        )

    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        ids = sorted({j for j in job_ids if j})
        if not ids:
            return True, ""
        done = call(["qdel", *ids])
        if done is None:
            return False, "qdel did not answer (or is not on PATH)"
        return done.returncode == 0, (done.stderr or done.stdout).strip()

    def site(self, job_ids: list[str]) -> str:
        """The PBS server the first job ran on (qstat's pbs_server)."""
        done = call(["qstat", "-x", "-f", "-F", "json", job_ids[0]]) if job_ids else None
        try:
            return str(json.loads(done.stdout).get("pbs_server", "")) if done is not None else ""
        except (ValueError, AttributeError):
            return ""

    def partitions(self) -> list[Partition]:
        return queues()

    def check_partition(self, partition: str) -> tuple[bool, str] | None:
        known = [q.name for q in queues()]
        return (
            (True, "listed by qstat -Q")
            if partition in known
            else (False, "qstat -Q lists: " + (", ".join(known) or "nothing"))
        )
