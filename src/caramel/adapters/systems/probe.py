"""Asking the machine: `bench system detect` (a draft system file) and `bench system check` (does it
hold).

Every command is run with a time bound; a command that is missing or fails is an answer too (a
guess with a comment in the draft, a failed check in the report), never a traceback.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caramel.adapters.backends import schedulers
from caramel.adapters.containers.runtime import RUNTIMES
from caramel.adapters.systems import stack
from caramel.adapters.systems.model import System
from caramel.errors import CaramelError, did_you_mean
from caramel.payloads.measure import NO_METHOD

RUNTIME_COMMANDS = {name: cls().executable for name, cls in RUNTIMES.items()}  # apptainer, ch-run


def ask(*command: str, timeout: float = 30) -> str | None:
    """The command's stdout, or None when it is missing, fails or hangs."""
    return schedulers.ask(*command, timeout=timeout)


def gpu_model() -> tuple[str, str]:
    """(vendor, model) from nvidia-smi or rocm-smi; ("", "") without either."""
    out = ask("nvidia-smi", "--query-gpu=name", "--format=csv,noheader")
    if out and out.strip():
        return "nvidia", out.strip().splitlines()[0].strip()
    out = ask("rocm-smi", "--showproductname")
    if out:
        match = re.search(r"Card (?:series|SKU|model)\s*:\s*(.+)", out)
        return "amd", match.group(1).strip() if match else "AMD GPU"
    return "", ""


def cpu_model() -> str:
    out = ask("lscpu") or ""
    match = re.search(r"^Model name:\s*(.+)$", out, re.M)
    return match.group(1).strip() if match else ""


def site_scheduler() -> schedulers.Scheduler:
    """The batch scheduler this host submits to (its commands on PATH); a CaramelError naming each
    registered one's commands when there is none."""
    found = schedulers.on_this_host()
    if found.name not in schedulers.NO_SCHEDULER:
        return found
    batch = [schedulers.get(n) for n in schedulers.names() if n not in schedulers.NO_SCHEDULER]
    wanted = "; ".join(f"{s.name}: {', '.join(s.commands)}" for s in batch)
    raise CaramelError(
        f"no batch scheduler here ({wanted} not on PATH), so there is nothing to detect; "
        "nothing was written",
        hint="run bench system detect on a login node of the cluster (or copy systems/local.yaml)",
    )


def detect(
    name: str, partition: str | None = None, folder: str = ".", backend: str | None = None
) -> str:
    """A draft system file (YAML text with comments where it guessed) from what this machine says,
    with its accelerator software stack and what `backend` (stack.NEEDS) would miss as comments;
    `folder`: where it is written, as the `--systems` of the check command it names."""
    scheduler = site_scheduler()
    found = scheduler.partitions()
    asked = ", ".join(scheduler.site_commands) or scheduler.name
    if not found:
        raise CaramelError(
            f"{asked} answered no partitions; nothing was written",
            hint=f"check that {scheduler.name} answers here ({asked}), then try again",
        )
    names = [p.name for p in found]
    if partition is not None and partition not in names:
        raise CaramelError(
            f"no partition '{partition}' here; nothing was written",
            hint=did_you_mean(partition, names) or "partitions: " + ", ".join(names),
        )
    chosen = (
        next(p for p in found if p.name == partition)
        if partition
        else next((p for p in found if p.default), found[0])
    )
    vendor, model = gpu_model()
    account = next(iter(scheduler.user_accounts()), "")
    runtime = next((r for r, cmd in RUNTIME_COMMANDS.items() if shutil.which(cmd)), "")
    energy = {"nvidia": "pynvml", "amd": "rocm"}.get(vendor, NO_METHOD)
    cpu = cpu_model()
    time_limit = chosen.time_limit if re.match(r"^[\d:-]+$", chosen.time_limit) else "01:00:00"
    gpu_part = (
        f", {chosen.gpus} x {model}" if model else (f", {chosen.gpus} GPUs" if chosen.gpus else "")
    )
    description = f"{chosen.name} partition, {chosen.cpus} cores{gpu_part}" + (
        f" ({cpu})" if cpu else ""
    )
    lines = [
        "# Drafted by `bench system detect` from "
        f"{asked}{', ' + vendor + '-smi' if vendor else ''} and lscpu.",
        f"# Read it through, then: bench system check {name} --systems {shlex.quote(folder)}",
        f"description: {_q(description)}",
        f"scheduler: {scheduler.name}",
        f"partition: {chosen.name}"
        + (
            ""
            if partition
            else "  # the default partition; others: "
            + ", ".join(n for n in names if n != chosen.name)
        ),
        f"account: {_q(account)}"
        + (
            f"  # your first account in {asked}"
            if account
            else f"  # GUESS: {asked} named no account for you; fill in the project to charge"
        ),
        "nodes: 1",
        f"gpus_per_node: {chosen.gpus}" + ("" if chosen.gres else "  # no GRES on this partition"),
        f"gres: {_q(f'gpu:{chosen.gpus}' if chosen.gpus else '')}",
        f"cpus_per_task: {chosen.cpus or 1}  # all cores of a node for the one task per node",
        "tasks_per_node: 1",
        f"time_limit: {_q(time_limit)}"
        + (
            ""
            if time_limit == chosen.time_limit
            else f"  # GUESS: the partition allows {chosen.time_limit}"
        ),
        f"launcher: {scheduler.parallel_launcher}",
        f"container_runtime: {_q(runtime)}"
        + ("" if runtime else "  # none found (apptainer, ch-run)"),
        f"energy_method: {energy}"
        + ("" if vendor else "  # GUESS: no nvidia-smi or rocm-smi here"),
        f"# memory per node: {chosen.memory_mb} MB; nodes in the partition: {chosen.nodes}",
    ]
    if model:
        lines.insert(3, f"# GPU: {model}")
    lines += stack.comment_lines(stack.software_stack(), backend)
    return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    return (
        '""'
        if not text
        else (
            f'"{text}"'
            if re.search(r"[:#{}\[\],&*!|>'\"%@`]", text) or text != text.strip()
            else text
        )
    )


@dataclass
class Finding:
    what: str
    ok: bool
    detail: str


def check(system: System, load_energy: Callable[[str], object] | None = None) -> list[Finding]:
    """What holds of `system` on this machine: scheduler, partition, account, launcher, runtime,
    images, and (with `load_energy`, caramel.payloads.measure.load_method) whether the energy method
    loads."""
    out: list[Finding] = []
    scheduler = (
        None if system.scheduler in schedulers.NO_SCHEDULER else schedulers.get(system.scheduler)
    )
    for cmd in dict.fromkeys(scheduler.site_commands[:1] + scheduler.commands) if scheduler else ():
        out.append(
            Finding(
                f"command {cmd}", shutil.which(cmd) is not None, shutil.which(cmd) or "not on PATH"
            )
        )
    if scheduler is not None:
        for what, value, asked in (
            ("partition", system.partition, scheduler.check_partition),
            ("account", system.account, scheduler.check_account),
        ):
            answer = asked(value) if value else None
            if answer is not None:
                out.append(Finding(f"{what} {value}", *answer))
    if system.launcher:
        path = shutil.which(system.launcher.split()[0])
        out.append(Finding(f"launcher {system.launcher}", path is not None, path or "not on PATH"))
    if system.container_runtime:
        cmd = RUNTIME_COMMANDS.get(system.container_runtime, system.container_runtime)
        path = shutil.which(cmd)
        out.append(
            Finding(
                f"container runtime {system.container_runtime}",
                path is not None,
                path or f"{cmd} not on PATH",
            )
        )
    if system.image_dir:
        folder = Path(os.path.expandvars(os.path.expanduser(system.image_dir)))
        out.append(
            Finding(
                f"image folder {system.image_dir}",
                folder.is_dir(),
                "exists" if folder.is_dir() else f"{folder.resolve()} does not exist",
            )
        )
    if load_energy is not None and system.energy_method and system.energy_method != NO_METHOD:
        try:
            load_energy(system.energy_method)
            out.append(Finding(f"energy method {system.energy_method}", True, "jpwr loads it"))
        except Exception as exc:  # jpwr or its vendor library missing: that is the answer
            out.append(Finding(f"energy method {system.energy_method}", False, str(exc)))
    return out
