"""How caramel's trainers lay out on a CPU node: how many processes, how many threads each.

The rule (docs/benchmarks.md, "Layout"): the free cores are the usable cores less those other
processes keep busy right now; the processes are the trainer's data-parallel ranks, at least one
per NUMA node that holds usable cores and at most one per free core, and the free cores are split
among them as PyTorch intra-op threads. How many ranks a trainer wants is its own
(`RULE_RANKS`): caramel's GPT takes as many as its shipped global batch has micro-batches (8
sequences of 2: 4 ranks), because on its small shape one rank per core beats threads; the ResNet
takes one per NUMA node, because its convolutions thread well and a second model copy costs more
than it saves (docs/benchmarks.md has both measurements). Busy cores are left out because an OpenMP
thread that has to wait for a core stalls every parallel region of its process (two threads on two
cores beside another busy process train many times slower than one thread). Across NUMA nodes,
threads would read weights from the other socket's memory, so there one rank per NUMA node at
least is the usual advice.

The rule cannot know what a node favours (on a quiet 2-core node two gloo ranks beat two threads in
one run and lost in the next), so a measurement comes first where there is one: `layout_choice()`
takes
$CARAMEL_CPU_LAYOUT where set, else what `bench layout --measure` (layout_probe) stored for this
node
(layout_store: same host, usable CPUs and torch, not stale), cut to the cores free now
(`fit_to_free`), else the rule; its `describe()` says which (`2x1 (measured 2026-11-25: ...)`, `1x2
(rule)`).

Torch-free: benchmark files call it when they are planned (`python` mode parameters).
"""

from __future__ import annotations

import enum
import functools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caramel.settings import current

NUMA_ROOT = Path("/sys/devices/system/node")
LOADAVG = Path("/proc/loadavg")
LAYOUT_VARIABLE = "CARAMEL_CPU_LAYOUT"
# layout_store.FILE_NAME; named here too so planning a benchmark imports the store (json, socket,
# datetime: 10 to 70 ms) only where a measurement exists
STORE_NAME = "cpu-layout.json"
# the data-parallel ranks the rule gives each trainer on a quiet node (at most one per free core):
# GPT's shipped CPU batch is 8 sequences in micro-batches of 2, so 4 ranks keep it; ResNet threads
RULE_RANKS = {"gpt": 4, "resnet": 1}


@dataclass(frozen=True)
class Layout:
    processes: int
    threads: int  # intra-op threads per process

    @property
    def cores(self) -> int:
        return self.processes * self.threads


def cpu_layout(cores: int, numa_nodes: int = 1, busy: float = 0.0, ranks: int = 1) -> Layout:
    """The rule: `busy` cores (rounded, at most all but one) are left to the processes that use
    them; `ranks` processes (the trainer's wish, RULE_RANKS), at least one per NUMA node holding
    usable cores, at most one per free core; the free cores split evenly among them."""
    if cores < 1:
        raise ValueError(f"a node with {cores} usable cores")
    free = free_cores(cores, busy)
    processes = max(1, min(max(numa_nodes, ranks), free))
    return Layout(processes, free // processes)


def free_cores(cores: int, busy: float) -> int:
    """The usable cores less the `busy` ones (rounded), at least one."""
    return cores - min(cores - 1, max(0, round(busy)))


def running_elsewhere(
    samples: int = 10, interval_s: float = 0.01, loadavg: Path = LOADAVG
) -> float:
    """How many other tasks are running or runnable now: the kernel's count (the fourth field of
    /proc/loadavg, `running/total`) less this process, the median of a few samples (the upper one of
    an even count; 0 where unreadable). Not `statistics.median`: `bench run` plans llm.yaml through
    this, and importing `statistics` (fractions, decimal, random) costs it about 10 ms
    (perf/bench_cpu.py)."""
    counts = []
    for i in range(samples):
        try:
            counts.append(int(loadavg.read_text().split()[3].split("/")[0]) - 1)
        except (OSError, IndexError, ValueError):
            return 0.0
        if i + 1 < samples:
            time.sleep(interval_s)
    return float(max(0, sorted(counts)[len(counts) // 2]))


def parse_cpulist(text: str) -> set[int]:
    """The CPUs of a sysfs cpulist (`0-3,8,10-11`)."""
    cpus: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (a SLURM allocation or taskset narrows them)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def numa_nodes_holding(cpus: set[int], root: Path = NUMA_ROOT) -> int:
    """How many NUMA nodes hold at least one of `cpus` (1 where the kernel shows none)."""
    try:
        nodes = [d for d in root.iterdir() if re.fullmatch(r"node\d+", d.name)]
    except OSError:
        return 1
    holding = 0
    for node in nodes:
        try:
            holding += bool(parse_cpulist((node / "cpulist").read_text()) & cpus)
        except (OSError, ValueError):
            continue
    return max(1, holding)


def parse_layout(text: str) -> Layout:
    """`PxT` (processes x threads), as $CARAMEL_CPU_LAYOUT gives it."""
    match = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*", text)
    processes, threads = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if processes < 1 or threads < 1:
        raise ValueError(
            f"{LAYOUT_VARIABLE}={text!r}: expected PROCESSESxTHREADS, both at least 1 (e.g. 1x4)"
        )
    return Layout(processes, threads)


class LayoutSource(str, enum.Enum):
    """Who chose the layout: $CARAMEL_CPU_LAYOUT, a measurement of this node, or the rule."""

    ENVIRONMENT = "environment"
    MEASURED = "measured"
    RULE = "rule"


@dataclass(frozen=True)
class LayoutChoice:
    layout: Layout
    source: LayoutSource
    # what the choice rests on, for people: `measured 2026-11-25: 2x1 19.5k vs 1x2 17.2k tokens/s`
    why: str

    def describe(self) -> str:
        """`2x1 (measured 2026-11-25: 2x1 19.5k vs 1x2 17.2k tokens/s)`, `1x2 (rule)`."""
        return f"{self.layout.processes}x{self.layout.threads} ({self.why})"


def fit_to_free(favourite: Layout, free: int) -> Layout:
    """A measured favourite on a node with `free` cores now: its processes and threads cut so they
    use no more than the free cores (threads first: an OpenMP thread waiting for a busy core stalls
    its whole process; then processes). A quiet node's favourite is the upper bound, the load the
    limit."""
    processes = max(1, min(favourite.processes, free))
    return Layout(processes, max(1, min(favourite.threads, free // processes)))


def measured_choice(workload: str, cpus: set[int], free: int, path: str) -> LayoutChoice | None:
    """The stored measurement of `workload` that holds for this node (host, usable CPUs, torch,
    age), fitted to the free cores; None where there is none (or the file is damaged: a warning)."""
    if not os.path.exists(path):  # the common case: no torch metadata lookup, no import
        return None
    from caramel.payloads.workloads import layout_store

    stored = [m for m in layout_store.read(path) if m.workload == workload]
    if not stored:
        return None
    measurement = stored[-1]
    stale = measurement.matches(layout_store.NodeIdentity.here(cpus))
    if stale:
        layout_store.note(
            f"note: the stored CPU layout of {workload} in {path} is not used: {stale}"
        )
        return None
    favourite = parse_layout(measurement.layout)
    layout = fit_to_free(favourite, free)
    why = measurement.summary()
    if layout != favourite:
        why += f"; cut from {measurement.layout}: {len(cpus) - free} of {len(cpus)} cores busy"
    return LayoutChoice(layout, LayoutSource.MEASURED, why)


# What measures a trainer's layout on its first use where none is stored (the CLI's `bench layout
# --measure`, installed by `bench run`: measure_on_first_use); None: planning never measures.
FirstUseMeasurer = Callable[[str], None]
_first_use: list[FirstUseMeasurer] = []


def measure_on_first_use(measurer: FirstUseMeasurer | None) -> None:
    """Let a plan of a system that runs here measure a trainer's layout where this node has none
    stored ($CARAMEL_LAYOUT_MEASURE=auto): `bench run` does, `bench plan` does not (a plan is
    quick). The rule cannot know what a node favours; a measurement kept per node can."""
    _first_use.clear()
    if measurer is not None:
        _first_use.append(measurer)
    forget_choice()


def layout_choice(workload: str = "gpt", runs_here: bool = False) -> LayoutChoice:
    """The layout of `workload`'s trainer on this node now, and why, decided once per process and
    workload: a plan asks for it once per parameter (processes, threads, what chose them), and the
    answers must agree however the node's load moves in between (a call with the default and one
    naming "gpt" are one decision: lru_cache alone keys them apart). $CARAMEL_CPU_LAYOUT=PxT where
    set (to compare layouts, or pin one); else the measurement `bench layout --measure` stored for
    this node (layout_store), cut to the free cores; else the rule (its usable cores, the NUMA nodes
    that hold them, the tasks running elsewhere). `runs_here`: the plan's system is this node
    (local, no accelerator), so where nothing is stored a first-use measurer may measure it now."""
    return _decided(workload, runs_here)


def forget_choice() -> None:
    """Decide the layout anew on the next call (bench layout after measuring; tests)."""
    _decided.cache_clear()


@functools.lru_cache(maxsize=8)
def _decided(workload: str, runs_here: bool = False) -> LayoutChoice:
    if current().cpu_layout:
        return LayoutChoice(
            parse_layout(current().cpu_layout), LayoutSource.ENVIRONMENT, LAYOUT_VARIABLE
        )
    cpus = usable_cpus()
    busy = running_elsewhere()
    rule = cpu_layout(len(cpus), numa_nodes_holding(cpus), busy, RULE_RANKS.get(workload, 1))
    measured = measured_choice(workload, cpus, free_cores(len(cpus), busy), store_file())
    if measured is None and _measures_first_use(runs_here, busy):
        _first_use[0](workload)  # none stored, or stale (another torch, CPU set, too old)
        measured = measured_choice(workload, cpus, free_cores(len(cpus), busy), store_file())
    if measured is not None:
        return measured
    return LayoutChoice(
        rule, LayoutSource.RULE, "rule" if busy < 0.5 else f"rule; {round(busy)} core(s) busy"
    )


def _measures_first_use(runs_here: bool, busy: float) -> bool:
    """Whether the first-use measurer measures now: the plan runs here, a measurer is registered
    and allowed (layout_measure auto), and the node is quiet (a measurement on a loaded node
    measures the load: the rule until quiet)."""
    quiet = busy < 0.5
    return runs_here and quiet and bool(_first_use) and current().layout_measure == "auto"


def store_file() -> str:
    """Where `bench layout --measure` keeps what it measured: the per-user data folder."""
    return os.path.join(current().data_dir, STORE_NAME)


def node_layout(workload: str = "gpt") -> Layout:
    """The layout `layout_choice` chose (benchmark files read its processes and threads)."""
    return layout_choice(workload).layout
