"""A run's system fingerprint and site: what the nodes it ran on are made of, and where they are.

The fingerprint comes from one probe, `templates/slurm/fingerprint.sh` (key=value lines: CPU model
and count, memory, GPU model and count, driver, CUDA or ROCm version). caramel's SLURM job script
runs it on the job's first node and leaves `caramel_fingerprint.txt` in the workpackage's work
folder; a local run ran on this host, so `bench result` runs the probe here. A run whose jobs were
submitted by its own do's (JUBE style) leaves no probe file: its fingerprint is this host's and
says so (`detected_on`).
"""

from __future__ import annotations

import glob
import os
import subprocess
from collections.abc import Callable

from caramel.settings import current
from caramel.stages.expand import layout
from caramel.stages.spec.sources import templates_dir

_NUMBERS = ("cpu_count", "gpu_count", "memory_gb")


def parse(text: str) -> dict[str, str | int]:
    """The probe's key=value lines; empty values left out, counts as numbers."""
    out: dict[str, str | int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        value = value.strip()
        if not sep or not key.strip() or not value:
            continue
        key = key.strip()
        out[key] = int(value) if key in _NUMBERS and value.isdigit() else value
    return out


def probe_here() -> dict[str, str | int]:
    """Run the probe on this host (a local run's node)."""
    script = templates_dir() / "slurm" / "fingerprint.sh"
    try:
        done = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse(done.stdout)


def from_run(run_dir: str, job_ids: list[str]) -> dict[str, str | int]:
    """The fingerprint of the nodes the run's workpackages ran on."""
    if job_ids:
        for path in glob.iglob(
            os.path.join(glob.escape(run_dir), "*", layout.WORK, layout.FINGERPRINT_FILE)
        ):
            try:
                with open(path) as handle:
                    found = parse(handle.read())
            except OSError:
                continue
            if found:
                return dict(
                    found, detected_on=f"job node {found.get('node') or found.get('host', '?')}"
                )
        found = probe_here()
        return dict(
            found,
            detected_on=f"{os.uname().nodename} (submitting host: the job left no probe file)",
        )
    return dict(probe_here(), detected_on=f"{os.uname().nodename} (local run)")


def site_name(job_ids: list[str], cluster_of: Callable[[list[str]], str] | None = None) -> str:
    """$CARAMEL_SITE, else the cluster the jobs ran on (`cluster_of`: the run's scheduler's
    `site`), else this host's short name."""
    if current().site:
        return current().site
    cluster = cluster_of(job_ids) if job_ids and cluster_of is not None else ""
    return cluster or os.uname().nodename.split(".")[0]
