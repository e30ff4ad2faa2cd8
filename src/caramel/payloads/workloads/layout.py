"""How caramel's trainers lay out on a CPU node: how many processes, how many threads each.

The rule (docs/benchmarks.md, "Layout"): the free cores are the usable cores less those other
processes keep busy right now; one process per NUMA node that holds usable cores, the free cores
split among them as PyTorch intra-op threads. Threads of one process share one copy of the model
and need no gradient exchange; data-parallel ranks on one node each hold a copy and all-reduce
every gradient over gloo each step, which on caramel's small CPU shapes costs more than it saves
(perf/workloads.py measures both). Busy cores are left out because an OpenMP thread that has to
wait for a core stalls every parallel region of its process (measured: 2 threads on 2 cores with
another busy process train 10 to 15 times slower than 1 thread). Across NUMA nodes, threads would
read weights from the other socket's memory, so there one rank per NUMA node is the usual advice.

Torch-free: benchmark files call it when they are planned (`python` mode parameters).
"""

from __future__ import annotations

import functools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from caramel.settings import current

NUMA_ROOT = Path("/sys/devices/system/node")
LOADAVG = Path("/proc/loadavg")
LAYOUT_VARIABLE = "CARAMEL_CPU_LAYOUT"


@dataclass(frozen=True)
class Layout:
    processes: int
    threads: int  # intra-op threads per process

    @property
    def cores(self) -> int:
        return self.processes * self.threads


def cpu_layout(cores: int, numa_nodes: int = 1, busy: float = 0.0) -> Layout:
    """The rule: `busy` cores (rounded, at most all but one) are left to the processes that use them;
    one process per NUMA node holding usable cores, the free cores split evenly among them."""
    if cores < 1:
        raise ValueError(f"a node with {cores} usable cores")
    free = cores - min(cores - 1, max(0, round(busy)))
    processes = max(1, min(numa_nodes, free))
    return Layout(processes, free // processes)


def running_elsewhere(samples: int = 10, interval_s: float = 0.01, loadavg: Path = LOADAVG) -> float:
    """How many other tasks are running or runnable now: the kernel's count (the fourth field of
    /proc/loadavg, `running/total`) less this process, the median of a few samples (the upper one of an
    even count; 0 where unreadable). Not `statistics.median`: `bench run` plans llm.yaml through this,
    and importing `statistics` (fractions, decimal, random) costs it about 10 ms (perf/bench_cpu.py)."""
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
        raise ValueError(f"{LAYOUT_VARIABLE}={text!r}: expected PROCESSESxTHREADS, both at least 1 (e.g. 1x4)")
    return Layout(processes, threads)


@functools.lru_cache(maxsize=1)
def node_layout() -> Layout:
    """The rule applied to this node now: its usable cores, the NUMA nodes that hold them and the
    tasks running elsewhere (measured once per process: a plan asks for it once per parameter).
    $CARAMEL_CPU_LAYOUT=PxT sets the layout instead (to compare layouts, or pin one)."""
    if current().cpu_layout:
        return parse_layout(current().cpu_layout)
    cpus = usable_cpus()
    return cpu_layout(len(cpus), numa_nodes_holding(cpus), running_elsewhere())
