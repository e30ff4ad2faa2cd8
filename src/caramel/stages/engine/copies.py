"""N users at once: copies of each workpackage of a step, run side by side on one node.

`copies: N` on a step (or `bench run --copies N`) gives the step a parameter `caramel_copy` with
the values 0 … N-1, so each copy is a workpackage of its own (own work folder, own figures), and
lets N of the step's workpackages run together. The copies of one configuration have adjacent
ids, so they start together. Copy k runs bound to its share of the cores (CPU affinity of the
shell that forks it) and of the system's devices, with `CARAMEL_COPY=k` in its environment: the
Mila suite's way to simulate N users, each with N_CPU / N and N_GPU / N.
"""

from __future__ import annotations

import copy as _copy
import dataclasses
import os

from caramel.errors import Location, SpecError
from caramel.stages.spec import model as m
from caramel.vocabulary import COPY_AGGREGATES

COPY_PARAM = "caramel_copy"
DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def usable_cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform: count the cores
        return list(range(os.cpu_count() or 1))


def device_count(bench: m.Benchmark) -> int:
    return bench.system.gpus_per_node if bench.system is not None else 0


def resolve_count(text: str, bench: m.Benchmark, where: Location) -> int:
    """The number of copies `text` asks for, checked against the cores and the system's devices."""
    devices = device_count(bench)
    cores = len(usable_cores())
    if text == "all":
        if devices < 1:
            system = bench.system.name if bench.system is not None else None
            raise SpecError(
                "copies: all needs the system's device count, and "
                + (
                    f"system '{system}' declares no devices (gpus_per_node)"
                    if system
                    else "no system tag selects a system file"
                ),
                where,
                hint="give a number (copies: 2) or pick a system with devices (--tag A100)",
            )
        count = devices
    else:
        count = int(text)
    if count > cores:
        raise SpecError(
            f"copies: {count} is more than the {cores} core(s) this machine lets bench use",
            where,
            hint=f"at most {cores} copies here: each copy is bound to cores of its own",
        )
    if devices and count > devices and bench.system is not None:
        raise SpecError(
            f"copies: {count} is more than the {devices} device(s) of system '{bench.system.name}'",
            where,
            hint=f"at most {devices} copies: each copy gets devices of its own",
        )
    return count


def apply_copies(bench: m.Benchmark, override: str | None = None) -> m.Benchmark:
    """`bench` with each step's copies made workpackages (`override`: `--copies` for every step)."""
    steps = {}
    psets = dict(bench.parametersets)
    for name, step in bench.steps.items():
        text = override or step.copies
        if not text or text == "1":
            steps[name] = step
            continue
        count = resolve_count(text, bench, step.where)
        pset_name = f"caramel_copies_{name}"
        psets[pset_name] = m.Parameterset(
            pset_name,
            [
                m.Parameter(
                    COPY_PARAM, ",".join(map(str, range(count))), type="int", where=step.where
                )
            ],
            where=step.where,
        )
        steps[name] = dataclasses.replace(
            step,
            copies=str(count),
            procs=max(step.procs, count),
            uses=[*step.uses, m.Use([pset_name], step.where)],
        )
    out = _copy.copy(bench)
    out.steps, out.parametersets = steps, psets
    return out


@dataclasses.dataclass
class Placement:
    copy: int
    cpus: set[int]
    env: dict[str, str]


def placement(step: m.Step, params: dict[str, str], devices: int) -> Placement | None:
    """Where copy k of a workpackage runs: its cores, its devices and CARAMEL_COPY (None: no
    copies)."""
    if not step.copies or step.copies in ("1", "all") or COPY_PARAM not in params:
        return None
    count, k = int(step.copies), int(params[COPY_PARAM])
    cores = usable_cores()
    per = max(1, len(cores) // count)
    cpus = set(cores[k * per : (k + 1) * per]) or {cores[k % len(cores)]}
    env = {
        "CARAMEL_COPY": str(k),
        "CARAMEL_COPIES": str(count),
        "CARAMEL_COPY_CPUS": ",".join(map(str, sorted(cpus))),
    }
    if devices:
        share = max(1, devices // count)
        visible = ",".join(str(d) for d in range(k * share, min(devices, (k + 1) * share)))
        env.update({name: visible for name in DEVICE_VARIABLES})
    return Placement(k, cpus, env)


def aggregate_of(step: m.Step) -> str:
    """What a benchmark's result over its copies is: the step's `copies_aggregate`, else `sum` (the
    node's throughput); `mean` is the figure per copy, as the Mila suite reports it."""
    return step.copies_aggregate or COPY_AGGREGATES[0]


def copy_count(step: m.Step) -> int | None:
    """How many copies of each workpackage the step ran (None: not known as a number, or none)."""
    return int(step.copies) if step.copies.isdigit() and int(step.copies) > 1 else None
