"""What every stage may read of the system a benchmark is planned for: `Benchmark.system`'s type.

The system file's class (`caramel.adapters.systems.model.System`) sits above the model among the
layers (it knows the container runtimes and the backends), so the model cannot import it. This
protocol is the part of it the lower stages read (spec, expand, engine, history): a `System`
satisfies it as it is, and the type checker holds every read to these names and types (no
`getattr(system, "x", default)`). A field a stage starts to read is added here, with the same type
as in `systems/model.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from caramel.errors import Location


@dataclass(frozen=True)
class CpuLayout:
    """The layout one of caramel's trainers takes on the CPUs of the node that plans."""

    processes: int
    threads: int  # per process
    choice: str  # what chose it: `2x1 (measured 2026-11-25: ...)`, `1x2 (rule)`


class SystemFacts(Protocol):
    name: str
    file: str  # the system file it was read from
    where: Location  # its file, for errors that name it
    scheduler: str  # a name in the backends' scheduler registry ("local": none)
    nodes: int
    max_nodes: int  # 0: not stated
    gpus_per_node: int
    accelerator: str  # nvidia, amd, ... ("": none)
    cpus_per_task: int
    tasks_per_node: int
    gres: str
    time_limit: str  # as the scheduler writes it ("": none)
    partition: str
    account: str
    launcher: str
    launcher_args: str
    modules: list[str]
    env: dict[str, str]
    container_runtime: str
    image_dir: str
    images: dict[str, str]  # image file per software stack
    energy_method: str
    scheduler_options: list[str]
    job_array: str  # a submit step's default for `array:` ("", "true", "false", "N")
    max_array_size: int  # 0: ask the scheduler

    def cpu_layout(self, trainer: str) -> CpuLayout:
        """The layout caramel's `trainer` ("gpt", "resnet") takes here (`$caramel_*_cpu_*`)."""
        ...
