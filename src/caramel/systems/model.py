"""A system: scheduler, partition, account, devices, launcher, modules, container runtime, energy."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

from caramel.errors import Location
from caramel.spec import model as m
from caramel.spec.model import NOWHERE

SCHEDULERS = ("slurm", "local")
RUNTIMES = ("", "apptainer", "charliecloud")
ENERGY = ("", "none", "pynvml", "rocm", "gh", "gc")


@dataclass
class System:
    name: str
    scheduler: str = "local"
    description: str = ""
    partition: str = ""
    account: str = ""
    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_task: int = 1
    tasks_per_node: int = 1
    gres: str = ""
    time_limit: str = ""
    launcher: str = ""  # srun, or nothing on the local machine
    launcher_args: str = ""
    modules: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    container_runtime: str = ""
    image_dir: str = ""
    energy_method: str = ""
    peak_tflops: float = 0.0  # peak rate per device (TFLOP/s, the benchmarks' precision): bench predict --from
    extra_sbatch: list[str] = field(default_factory=list)  # further `#SBATCH` lines, as written
    file: str = ""
    where: Location = NOWHERE

    def parameters(self) -> dict[str, str]:
        """The system as parameters (`system_partition`, ...): what `use: system` brings into a step."""
        out = {}
        for f in fields(self):
            if f.name in ("file", "where"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, list):
                value = " ".join(value) if f.name != "modules" else ",".join(value)
            elif isinstance(value, dict):
                value = " ".join(f"{k}={v}" for k, v in value.items())
            out["system_name" if f.name == "name" else f"system_{f.name}"] = str(value)
        return out


def with_system(bench: m.Benchmark, system: System | None) -> m.Benchmark:
    """`bench` knowing its system: `bench.system`, and a parameterset `system` (unless the file has
    its own of that name) that steps can `use`."""
    if system is None:
        return bench
    bench = copy.copy(bench)
    bench.system = system
    if "system" not in bench.parametersets:
        pset = m.Parameterset("system", where=system.where)
        for name, value in system.parameters().items():
            # one value each, whatever commas the text holds (a description, launcher flags)
            pset.parameters.append(m.Parameter(name, value, separator="\x1f", where=system.where))
        bench.parametersets = dict(bench.parametersets, system=pset)
    return bench
