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
from caramel.adapters.backends.schedulers import Partition
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


@dataclass(frozen=True)
class _Answers:
    """What the machine said, as `detect` drafts a system file from it."""

    scheduler: schedulers.Scheduler
    asked: str  # the scheduler's commands that were asked, as the comments name them
    chosen: Partition
    others: list[str] | None  # the other partitions, when the default one was taken
    vendor: str
    model: str
    account: str
    runtime: str
    cpu: str


def detect(
    name: str, partition: str | None = None, folder: str = ".", backend: str | None = None
) -> str:
    """A draft system file (YAML text with comments where it guessed) from what this machine says,
    with its accelerator software stack and what `backend` (stack.NEEDS) would miss as comments;
    `folder`: where it is written, as the `--systems` of the check command it names."""
    scheduler = site_scheduler()
    asked = ", ".join(scheduler.site_commands) or scheduler.name
    found = scheduler.partitions()
    chosen = _chosen_partition(found, partition, asked, scheduler.name)
    vendor, model = gpu_model()
    answers = _Answers(
        scheduler=scheduler,
        asked=asked,
        chosen=chosen,
        others=None if partition is not None else [p.name for p in found if p.name != chosen.name],
        vendor=vendor,
        model=model,
        account=next(iter(scheduler.user_accounts()), ""),
        runtime=_container_runtime(),
        cpu=cpu_model(),
    )
    lines = [
        *_header_lines(answers, name, folder),
        *_where_lines(answers),
        *_node_lines(chosen),
        *_tool_lines(answers),
        f"# memory per node: {chosen.memory_mb} MB; nodes in the partition: {chosen.nodes}",
    ]
    lines += stack.comment_lines(stack.software_stack(), backend)
    return "\n".join(lines) + "\n"


def _container_runtime() -> str:
    """The first container runtime whose command is on PATH; "" for none."""
    return next((name for name, cmd in RUNTIME_COMMANDS.items() if shutil.which(cmd)), "")


def _chosen_partition(
    found: list[Partition], partition: str | None, asked: str, scheduler: str
) -> Partition:
    """The partition named, or else the site's default (else its first); a CaramelError when the
    scheduler lists none or not the one named."""
    if not found:
        raise CaramelError(
            f"{asked} answered no partitions; nothing was written",
            hint=f"check that {scheduler} answers here ({asked}), then try again",
        )
    if partition is None:
        return _default_partition(found)
    named = {p.name: p for p in found}
    if partition not in named:
        raise _no_such_partition(partition, list(named))
    return named[partition]


def _default_partition(found: list[Partition]) -> Partition:
    """The partition the site marks as default, else the first it lists."""
    return next((p for p in found if p.default), found[0])


def _no_such_partition(partition: str, names: list[str]) -> CaramelError:
    return CaramelError(
        f"no partition '{partition}' here; nothing was written",
        hint=did_you_mean(partition, names) or "partitions: " + ", ".join(names),
    )


def _noted(line: str, note: str) -> str:
    """A draft line with its comment, when it has one."""
    return f"{line}  # {note}" if note else line


def _header_lines(answers: _Answers, name: str, folder: str) -> list[str]:
    """Where the draft came from, how to check it, and what the partition is."""
    smi = f", {answers.vendor}-smi" if answers.vendor else ""
    lines = [
        f"# Drafted by `bench system detect` from {answers.asked}{smi} and lscpu.",
        f"# Read it through, then: bench system check {name} --systems {shlex.quote(folder)}",
        f"description: {_q(_description(answers))}",
    ]
    if answers.model:
        lines.append(f"# GPU: {answers.model}")
    return lines


def _description(answers: _Answers) -> str:
    """The partition in a phrase: its name, cores, GPUs and CPU model as far as they are known."""
    chosen = answers.chosen
    if answers.model:
        gpus = f", {chosen.gpus} x {answers.model}"
    else:
        gpus = f", {chosen.gpus} GPUs" if chosen.gpus else ""
    cpu = f" ({answers.cpu})" if answers.cpu else ""
    return f"{chosen.name} partition, {chosen.cpus} cores{gpus}{cpu}"


def _where_lines(answers: _Answers) -> list[str]:
    """Scheduler, partition and account, with a comment where the draft chose or guessed."""
    others = answers.others
    account_note = (
        f"your first account in {answers.asked}"
        if answers.account
        else f"GUESS: {answers.asked} named no account for you; fill in the project to charge"
    )
    return [
        f"scheduler: {answers.scheduler.name}",
        _noted(
            f"partition: {answers.chosen.name}",
            "" if others is None else "the default partition; others: " + ", ".join(others),
        ),
        _noted(f"account: {_q(answers.account)}", account_note),
    ]


def _node_lines(chosen: Partition) -> list[str]:
    """What a job gets of a node of the partition, and for how long."""
    time_limit, time_note = _time_limit(chosen)
    return [
        "nodes: 1",
        _noted(f"gpus_per_node: {chosen.gpus}", "" if chosen.gres else "no GRES on this partition"),
        f"gres: {_q(f'gpu:{chosen.gpus}' if chosen.gpus else '')}",
        f"cpus_per_task: {chosen.cpus or 1}  # all cores of a node for the one task per node",
        "tasks_per_node: 1",
        _noted(f"time_limit: {_q(time_limit)}", time_note),
    ]


def _time_limit(chosen: Partition) -> tuple[str, str]:
    """The partition's time limit when it is a duration, else an hour with a note saying so."""
    if re.match(r"^[\d:-]+$", chosen.time_limit):
        return chosen.time_limit, ""
    return "01:00:00", f"GUESS: the partition allows {chosen.time_limit}"


def _tool_lines(answers: _Answers) -> list[str]:
    """Launcher, container runtime and energy method, with a comment where none was found."""
    energy = {"nvidia": "pynvml", "amd": "rocm"}.get(answers.vendor, NO_METHOD)
    return [
        f"launcher: {answers.scheduler.parallel_launcher}",
        _noted(
            f"container_runtime: {_q(answers.runtime)}",
            "" if answers.runtime else "none found (apptainer, ch-run)",
        ),
        _noted(
            f"energy_method: {energy}",
            "" if answers.vendor else "GUESS: no nvidia-smi or rocm-smi here",
        ),
    ]


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
    return [
        *_scheduler_findings(system),
        *_launcher_findings(system),
        *_runtime_findings(system),
        *_image_findings(system),
        *_energy_findings(system, load_energy),
    ]


def _scheduler_findings(system: System) -> list[Finding]:
    """The scheduler's commands on PATH, and what it says of the partition and the account."""
    if system.scheduler in schedulers.NO_SCHEDULER:
        return []
    scheduler = schedulers.get(system.scheduler)
    commands = dict.fromkeys(scheduler.site_commands[:1] + scheduler.commands)
    on_path = [
        Finding(f"command {cmd}", _on_path(cmd), shutil.which(cmd) or "not on PATH")
        for cmd in commands
    ]
    return on_path + _site_findings(system, scheduler)


def _site_findings(system: System, scheduler: schedulers.Scheduler) -> list[Finding]:
    """What the scheduler says of the system's partition and account, where it can tell."""
    out = []
    for what, value, asked in (
        ("partition", system.partition, scheduler.check_partition),
        ("account", system.account, scheduler.check_account),
    ):
        answer = asked(value) if value else None
        if answer is not None:
            out.append(Finding(f"{what} {value}", *answer))
    return out


def _on_path(command: str) -> bool:
    return shutil.which(command) is not None


def _launcher_findings(system: System) -> list[Finding]:
    if not system.launcher:
        return []
    path = shutil.which(system.launcher.split()[0])
    return [Finding(f"launcher {system.launcher}", path is not None, path or "not on PATH")]


def _runtime_findings(system: System) -> list[Finding]:
    if not system.container_runtime:
        return []
    cmd = RUNTIME_COMMANDS.get(system.container_runtime, system.container_runtime)
    path = shutil.which(cmd)
    what = f"container runtime {system.container_runtime}"
    return [Finding(what, path is not None, path or f"{cmd} not on PATH")]


def _image_findings(system: System) -> list[Finding]:
    if not system.image_dir:
        return []
    folder = Path(os.path.expandvars(os.path.expanduser(system.image_dir)))
    detail = "exists" if folder.is_dir() else f"{folder.resolve()} does not exist"
    return [Finding(f"image folder {system.image_dir}", folder.is_dir(), detail)]


def _energy_findings(system: System, load_energy: Callable[[str], object] | None) -> list[Finding]:
    """Whether the energy method loads, when asked (`load_energy`) and the system names one."""
    method = system.energy_method
    if load_energy is None or not method or method == NO_METHOD:
        return []
    try:
        load_energy(method)
    except Exception as exc:  # jpwr or its vendor library missing: that is the answer
        return [Finding(f"energy method {method}", False, str(exc))]
    return [Finding(f"energy method {method}", True, "jpwr loads it")]
