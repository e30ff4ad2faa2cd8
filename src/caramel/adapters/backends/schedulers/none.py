"""No batch scheduler: a run whose do's run here and submit nothing caramel follows.

Registered as `none` and as `local` (the name system files have used for "this machine"). It has no
commands, prints no job ids, knows no job states, and refuses a `submit: true` step with a message
that says why (there is nothing to submit to).
"""

from __future__ import annotations

from caramel.adapters.backends.schedulers import JobState, Scheduler, register
from caramel.errors import RunError


class NoScheduler(Scheduler):
    name = "none"

    def submit_line(self, job_file: str) -> str:
        raise RunError(
            "a step with submit: true needs a batch scheduler, and this run has none",
            hint="pick a system whose scheduler submits jobs (scheduler: slurm), or run on a login "
            "node of one (its scheduler is found there), or remove submit: true",
        )

    def job_id_in(self, path: str) -> str:
        return ""

    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        return {}

    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        return (not job_ids, "no batch scheduler here to cancel jobs with" if job_ids else "")


register("none")(NoScheduler)
register("local")(NoScheduler)
