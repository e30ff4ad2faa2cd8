"""Which CPU layout this node favours, measured: `bench layout --measure`.

Every candidate layout (one single-threaded process, one process with every usable core, one gloo
rank per core, and the rule's) runs caramel's own trainer as a job runs it: a separate process,
started directly or through `torchrun --standalone`, with the shipped benchmark file's CPU shape
(global batch 8; `--shape` replaces it) and `--threads T`. Only the trainer's timed loop counts (its
iteration lines: tokens/s for GPT, `total images/sec` for ResNet), not its start-up. The candidates
run in interleaved rounds, each round starting at another one, so drift and other users' load fall
on all alike; the winner is the best median. A run that takes longer than `timeout_s` drops its
candidate (on a node where other work keeps a core busy, two threads crawl: docs/benchmarks.md), and
a candidate under a quarter of the best median so far runs no more rounds (its figures are kept).

Cost: each run is a trainer start (importing torch, about 4 s of CPU) plus warm-up and the timed
iterations, so candidates x repeats starts: 3 x 3 on a 2-core node, about 50 s when it is quiet.

This parent never imports torch: only its children do.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from caramel.payloads.workloads.layout import (
    RULE_RANKS,
    Layout,
    cpu_layout,
    numa_nodes_holding,
    usable_cpus,
)
from caramel.payloads.workloads.layout_store import Measurement, NodeIdentity, median

# sequences (GPT) or images (ResNet) an iteration, whatever the layout, as the shipped files run
GLOBAL_BATCH = 8
SHAPES = {  # the shipped benchmark files' CPU shapes (benchmarks/llm.yaml, benchmarks/resnet50.xml)
    "gpt": "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 "
    "--micro-batch-size 2",
    "resnet": "--model resnet_small",
}
UNITS = {"gpt": "tokens/s", "resnet": "images/s"}
HOPELESS = 4  # a candidate under a quarter of the best median runs no more rounds
ITERATION_SECONDS = re.compile(r"elapsed time per iteration \(s\): ([\d.]+)")
IMAGES_PER_SECOND = re.compile(r"total images/sec: ([\d.]+)")


class ProbeError(RuntimeError):
    pass


@dataclass(frozen=True)
class ProbePlan:
    workload: str  # gpt or resnet
    candidates: tuple[Layout, ...]
    iterations: int = 30
    repeats: int = 3
    warmup: int = 3
    shape: str = ""  # the trainer's shape arguments ("": the shipped file's)
    timeout_s: float = 300.0

    @property
    def shape_text(self) -> str:
        return self.shape or SHAPES[self.workload]


def candidate_layouts(cpus: set[int] | None = None, workload: str = "gpt") -> tuple[Layout, ...]:
    """1x1, 1xN, Nx1 for N usable cores, and the rule's layout of `workload` on a quiet node."""
    cpus = cpus if cpus is not None else usable_cpus()
    cores = len(cpus)
    rule = cpu_layout(cores, numa_nodes_holding(cpus), ranks=RULE_RANKS.get(workload, 1))
    return tuple(dict.fromkeys([Layout(1, 1), Layout(1, cores), Layout(cores, 1), rule]))


def name_of(layout: Layout) -> str:
    return f"{layout.processes}x{layout.threads}"


def _option(shape: str, name: str, default: int) -> int:
    match = re.search(rf"--{name}[ =](\d+)", shape)
    return int(match.group(1)) if match else default


def trainer_command(plan: ProbePlan, layout: Layout) -> list[str]:
    """The trainer of `plan` in `layout`, as the shipped benchmark file starts it."""
    launcher = [sys.executable]
    if layout.processes > 1:
        launcher += [
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(layout.processes),
        ]
    shape = plan.shape_text.split()
    if plan.workload == "gpt":
        micro = _option(plan.shape_text, "micro-batch-size", 2)
        batch = (
            micro * layout.processes * max(1, GLOBAL_BATCH // (micro * layout.processes))
        )  # as llm.yaml
        return [
            *launcher,
            "-m",
            "caramel.payloads.workloads.gpt",
            *shape,
            "--global-batch-size",
            str(batch),
            "--train-iters",
            str(plan.iterations),
            "--warmup-iters",
            str(plan.warmup),
            "--log-interval",
            "1",
            "--device",
            "cpu",
            "--threads",
            str(layout.threads),
        ]
    per_device = max(1, GLOBAL_BATCH // layout.processes)  # as resnet50.xml
    return [
        *launcher,
        "-m",
        "caramel.payloads.workloads.resnet",
        *shape,
        "--batch_size",
        str(per_device),
        "--num_batches",
        str(plan.iterations),
        "--num_warmup_batches",
        str(plan.warmup),
        "--device",
        "cpu",
        "--threads",
        str(layout.threads),
    ]


def throughput(plan: ProbePlan, layout: Layout, log: str) -> float:
    """The timed loop's throughput from a trainer's log (start-up not counted)."""
    if plan.workload == "gpt":
        seconds = [float(s) for s in ITERATION_SECONDS.findall(log)]
        micro = _option(plan.shape_text, "micro-batch-size", 2)
        batch = micro * layout.processes * max(1, GLOBAL_BATCH // (micro * layout.processes))
        sequence = _option(plan.shape_text, "seq-length", 64)
        if not seconds or sum(seconds) <= 0:
            raise ProbeError(f"{name_of(layout)}: the trainer printed no iteration lines")
        return batch * sequence * len(seconds) / sum(seconds)
    match = IMAGES_PER_SECOND.search(log)
    if not match or float(match.group(1)) <= 0:
        raise ProbeError(f"{name_of(layout)}: the trainer printed no `total images/sec`")
    return float(match.group(1))


def child_environment(layout: Layout) -> dict[str, str]:
    """The environment of a candidate's trainer: this caramel first on the path, the layout
    pinned."""
    package_root = str(Path(__file__).resolve().parents[3])  # the folder holding caramel/
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH", "")]))
    return {
        **os.environ,
        "PYTHONPATH": path,
        "CARAMEL_CPU_LAYOUT": name_of(layout),
        "OMP_NUM_THREADS": str(layout.threads),
    }


def run_candidate(plan: ProbePlan, layout: Layout) -> float:
    """One run of the trainer in `layout`: its throughput. ProbeError when it fails or runs too
    long."""
    try:
        done = subprocess.run(
            trainer_command(plan, layout),
            env=child_environment(layout),
            capture_output=True,
            text=True,
            timeout=plan.timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise ProbeError(f"{name_of(layout)}: longer than {plan.timeout_s:.0f} s") from None
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise ProbeError(f"{name_of(layout)}: the trainer failed (exit {done.returncode}):\n{tail}")
    return throughput(plan, layout, done.stdout + done.stderr)


def measure(
    plan: ProbePlan,
    report: Callable[[str], None] = print,
    runner: Callable[[ProbePlan, Layout], float] = run_candidate,
) -> Measurement:
    """Interleaved rounds of every candidate; the measurement with the best median as the winner."""
    start, cpus = time.perf_counter(), usable_cpus()
    figures: dict[str, list[float]] = {name_of(c): [] for c in plan.candidates}
    alive = list(plan.candidates)
    for round_index in range(plan.repeats):
        shift = round_index % max(1, len(alive))
        ran: dict[str, float] = {}
        for layout in alive[shift:] + alive[:shift]:
            try:
                ran[name_of(layout)] = runner(plan, layout)
                figures[name_of(layout)].append(ran[name_of(layout)])
            except ProbeError as exc:
                report(f"  {exc}: {name_of(layout)} left out")
                alive.remove(layout)
                figures.pop(name_of(layout))
        report(
            f"round {round_index + 1} of {plan.repeats} ({load()}): "
            + ", ".join(f"{name} {value:.0f}" for name, value in ran.items())
            + f" {UNITS[plan.workload]}"
        )
        for layout in hopeless(alive, figures):
            report(
                f"  {name_of(layout)}: under 1/{HOPELESS} of the best median so far: no more runs"
            )
            alive.remove(layout)
    if not figures:
        raise ProbeError("no candidate layout ran")
    date = datetime.now(timezone.utc).replace(microsecond=0)
    measurement = Measurement(
        plan.workload,
        "",
        UNITS[plan.workload],
        date,
        NodeIdentity.here(cpus),
        plan.shape_text,
        plan.iterations,
        plan.repeats,
        time.perf_counter() - start,
        figures,
    )
    return replace(measurement, layout=max(figures, key=measurement.median))


def hopeless(alive: list[Layout], figures: dict[str, list[float]]) -> list[Layout]:
    """The candidates whose median is under 1/HOPELESS of the best one's: more runs cannot make them
    win, and on a loaded node they are the slow ones (two threads with a busy core: 20 to 40 times
    slower)."""
    medians = {c: median(figures[name_of(c)]) for c in alive if figures.get(name_of(c))}
    best = max(medians.values(), default=0.0)
    return [c for c, value in medians.items() if value * HOPELESS < best]


def load() -> str:
    try:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load unknown"
