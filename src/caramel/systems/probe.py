"""Asking the machine: `bench system detect` (a draft system file) and `bench system check` (does it hold).

Every command is run with a time bound; a command that is missing or fails is an answer too (a
guess with a comment in the draft, a failed check in the report), never a traceback.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caramel.backends import schedulers
from caramel.containers.runtime import RUNTIMES
from caramel.energy.measure import NO_METHOD
from caramel.errors import CaramelError, did_you_mean
from caramel.systems.model import System

RUNTIME_COMMANDS = {name: cls().executable for name, cls in RUNTIMES.items()}  # apptainer, ch-run


def ask(*command: str, timeout: float = 30) -> str | None:
    """The command's stdout, or None when it is missing, fails or hangs."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


@dataclass
class Partition:
    name: str
    default: bool
    cpus: int
    memory_mb: int
    gres: str
    time_limit: str
    nodes: int

    @property
    def gpus(self) -> int:
        """GPUs per node from the GRES (`gpu:4`, `gpu:a100:4(S:0-1)`)."""
        match = re.search(r"gpu(?::[\w.-]+)?:(\d+)", self.gres)
        return int(match.group(1)) if match else 0


def partitions() -> list[Partition]:
    out = ask("sinfo", "-h", "-o", "%P|%c|%m|%G|%l|%D")
    found: dict[str, Partition] = {}
    for line in (out or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6:
            continue
        name, cpus, mem, gres, limit, nodes = parts
        default = name.endswith("*")
        name = name.rstrip("*")
        if name not in found:  # the first node group of a partition stands for it
            found[name] = Partition(name, default, _int(cpus), _int(mem), "" if gres == "(null)" else gres, limit,
                                    _int(nodes))
    return list(found.values())


def _int(text: str) -> int:
    match = re.match(r"\d+", text.strip())
    return int(match.group(0)) if match else 0


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


def user_account() -> str:
    out = ask("sacctmgr", "-n", "-P", "show", "assoc", f"user={getpass.getuser()}", "format=account")
    accounts = [a.strip() for a in (out or "").splitlines() if a.strip()]
    return accounts[0] if accounts else ""


def detect(name: str, partition: str | None = None) -> str:
    """A draft system file (YAML text with comments where it guessed) from what this machine says."""
    if shutil.which("sinfo") is None:
        raise CaramelError("no SLURM here: sinfo is not on PATH, so there is nothing to detect; nothing was written",
                           hint="run bench system detect on a login node of the cluster (or copy systems/local.yaml)")
    found = partitions()
    if not found:
        raise CaramelError("sinfo answered no partitions; nothing was written",
                           hint="check that SLURM answers here (sinfo), then try again")
    names = [p.name for p in found]
    if partition is not None and partition not in names:
        raise CaramelError(f"no partition '{partition}' here; nothing was written",
                           hint=did_you_mean(partition, names) or "partitions: " + ", ".join(names))
    chosen = next(p for p in found if p.name == partition) if partition else \
        next((p for p in found if p.default), found[0])
    vendor, model = gpu_model()
    account = user_account()
    runtime = next((r for r, cmd in RUNTIME_COMMANDS.items() if shutil.which(cmd)), "")
    energy = {"nvidia": "pynvml", "amd": "rocm"}.get(vendor, NO_METHOD)
    cpu = cpu_model()
    time_limit = chosen.time_limit if re.match(r"^[\d:-]+$", chosen.time_limit) else "01:00:00"
    lines = [
        f"# Drafted by `bench system detect` from sinfo, sacctmgr{', ' + vendor + '-smi' if vendor else ''} and lscpu.",
        "# Read it through, then: bench system check " + name,
        f"description: {_q(f'{chosen.name} partition, {chosen.cpus} cores' + (f', {chosen.gpus} x {model}' if model else (f', {chosen.gpus} GPUs' if chosen.gpus else '')) + (f' ({cpu})' if cpu else ''))}",
        "scheduler: slurm",
        f"partition: {chosen.name}" + ("" if partition else "  # the default partition; others: " +
                                        ", ".join(n for n in names if n != chosen.name)),
        f"account: {_q(account)}" + ("  # your first account in sacctmgr" if account else
                                      "  # GUESS: sacctmgr named no account for you; fill in the project to charge"),
        "nodes: 1",
        f"gpus_per_node: {chosen.gpus}" + ("" if chosen.gres else "  # no GRES on this partition"),
        f"gres: {_q(f'gpu:{chosen.gpus}' if chosen.gpus else '')}",
        f"cpus_per_task: {chosen.cpus or 1}  # all cores of a node for the one task per node",
        "tasks_per_node: 1",
        f"time_limit: {_q(time_limit)}" + ("" if time_limit == chosen.time_limit else
                                           f"  # GUESS: the partition allows {chosen.time_limit}"),
        "launcher: srun",
        f"container_runtime: {_q(runtime)}" + ("" if runtime else "  # none found (apptainer, ch-run)"),
        f"energy_method: {energy}" + ("" if vendor else "  # GUESS: no nvidia-smi or rocm-smi here"),
        f"# memory per node: {chosen.memory_mb} MB; nodes in the partition: {chosen.nodes}",
    ]
    if model:
        lines.insert(3, f"# GPU: {model}")
    return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    return '""' if not text else (f'"{text}"' if re.search(r"[:#{}\[\],&*!|>'\"%@`]", text) or
                                  text != text.strip() else text)


@dataclass
class Finding:
    what: str
    ok: bool
    detail: str


def check(system: System, load_energy: Callable[[str], object] | None = None) -> list[Finding]:
    """What holds of `system` on this machine: scheduler, partition, account, launcher, runtime, images,
    and (with `load_energy`, caramel.energy.measure.load_method) whether the energy method loads."""
    out: list[Finding] = []
    commands: tuple[str, ...] = ("sinfo",) if system.scheduler == "slurm" else ()  # sinfo: the partitions checked below
    if system.scheduler not in schedulers.NO_SCHEDULER:
        commands += schedulers.get(system.scheduler).commands
    for cmd in commands:
        out.append(Finding(f"command {cmd}", shutil.which(cmd) is not None, shutil.which(cmd) or "not on PATH"))
    if system.scheduler == "slurm":
        if system.partition:
            known = [p.name for p in partitions()]
            out.append(Finding(f"partition {system.partition}", system.partition in known,
                               "listed by sinfo" if system.partition in known else
                               "sinfo lists: " + (", ".join(known) or "nothing")))
        if system.account:
            listed = ask("sacctmgr", "-n", "-P", "show", "account", system.account, "format=account")
            found = bool(listed and system.account in listed.split())
            out.append(Finding(f"account {system.account}", found,
                               "known to sacctmgr" if found else "sacctmgr does not know it"))
    if system.launcher:
        path = shutil.which(system.launcher.split()[0])
        out.append(Finding(f"launcher {system.launcher}", path is not None, path or "not on PATH"))
    if system.container_runtime:
        cmd = RUNTIME_COMMANDS.get(system.container_runtime, system.container_runtime)
        path = shutil.which(cmd)
        out.append(Finding(f"container runtime {system.container_runtime}", path is not None,
                           path or f"{cmd} not on PATH"))
    if system.image_dir:
        folder = Path(os.path.expandvars(os.path.expanduser(system.image_dir)))
        out.append(Finding(f"image folder {system.image_dir}", folder.is_dir(),
                           "exists" if folder.is_dir() else f"{folder.resolve()} does not exist"))
    if load_energy is not None and system.energy_method and system.energy_method != NO_METHOD:
        try:
            load_energy(system.energy_method)
            out.append(Finding(f"energy method {system.energy_method}", True, "jpwr loads it"))
        except Exception as exc:  # jpwr or its vendor library missing: that is the answer
            out.append(Finding(f"energy method {system.energy_method}", False, str(exc)))
    return out
