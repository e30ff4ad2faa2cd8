"""A system: scheduler, partition, account, devices, launcher, modules, container runtime,
energy."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from caramel.adapters.containers.runtime import container_prefix
from caramel.errors import Location
from caramel.stages.spec.model import NOWHERE
from caramel.stages.spec.system import CpuLayout

# settings every system has (defaults that mean something: no GPUs, no gres, one node per job)
ALWAYS = frozenset(
    {
        "name",
        "scheduler",
        "description",
        "nodes",
        "max_nodes",
        "gpus_per_node",
        "accelerator",
        "cpus_per_task",
        "cpus_per_device",
        "tasks_per_node",
        "gres",
        "launcher_args",
        "modules",
        "env",
        "container_runtime",
        "scheduler_options",
        "data_dir",
    }
)


@dataclass
class System:
    name: str
    scheduler: str = "local"
    description: str = ""
    partition: str = ""
    account: str = ""
    nodes: int = 1
    max_nodes: int = 0  # the most nodes a job may take here (0: not stated); checked at plan time
    gpus_per_node: int = 0
    accelerator: str = (
        ""  # nvidia, amd, ...: what the container runtime must expose (apptainer --nv)
    )
    cpus_per_task: int = 1
    cpus_per_device: int = 0  # cores for one task per device (0: cpus_per_task shared by the tasks)
    tasks_per_node: int = 1
    gres: str = ""
    time_limit: str = ""
    launcher: str = ""  # srun, or nothing on the local machine
    launcher_args: str = ""
    modules: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    container_runtime: str = ""
    image_dir: str = (
        ""  # the site's folder of images: absolute, or relative to the folder bench runs in
    )
    # the site's folder of data sets and corpora: absolute, or relative to the folder bench runs in
    data_dir: str = "data"
    images: dict[str, str] = field(
        default_factory=dict
    )  # image file per software stack: {pytorch: x.sif}
    energy_method: str = ""
    peak_tflops: float = (
        0.0  # peak rate per device (TFLOP/s, the benchmarks' precision): bench predict --from
    )
    # further directive lines of its scheduler's job scripts, as written (`--exclusive`: SLURM's
    # `#SBATCH --exclusive`); files written for SLURM name them `extra_sbatch` (systems/loader.py)
    scheduler_options: list[str] = field(default_factory=list)
    job_array: str = (
        ""  # a submit step's default for `array:` ("", true, false, N); docs/systems.md
    )
    max_array_size: int = 0  # SLURM's MaxArraySize here (0: ask `scontrol show config`)
    given: frozenset[str] | None = None  # the settings the file states (None: all of them)
    file: str = ""
    where: Location = NOWHERE

    def parameters(self) -> dict[str, str]:
        """The system as parameters (`system_partition`, ...): what `use: system` brings into a
        step. A setting the file does not state is left out unless it has a meaningful default
        (ALWAYS), so a benchmark that needs it keeps `$system_account` unresolved and the plan names
        it."""
        out = {
            _parameter_name(setting): _parameter_text(setting, getattr(self, setting))
            for setting in self._stated()
        }
        out["system_images"] = " ".join(self.images)
        out.update({f"system_image_{stack}": image for stack, image in self.images.items()})
        if self.container_runtime:
            out["system_container_prefix"] = self.container_prefix()
        return out

    def _stated(self) -> list[str]:
        """The settings that become parameters, in field order: those the file states (all of
        them without `given`) and those with a meaningful default (ALWAYS)."""
        names = [f.name for f in fields(self)]
        wanted = (frozenset(names) if self.given is None else self.given) | ALWAYS
        return [name for name in names if name in wanted and name not in _NOT_PARAMETERS]

    def cpu_layout(self, trainer: str) -> CpuLayout:
        """The layout caramel's `trainer` takes on the node that plans, decided once per process
        when a benchmark file first names it (`$caramel_gpt_cpu_processes`, expand/builtins.py):
        the layout module's choice ($CARAMEL_CPU_LAYOUT, a stored measurement, else the rule)."""
        from caramel.payloads.workloads.layout import layout_choice

        runs_here = self.scheduler == "local" and not self.gpus_per_node and not self.accelerator
        choice = layout_choice(trainer, runs_here)
        return CpuLayout(choice.layout.processes, choice.layout.threads, choice.describe())

    def container_prefix(self) -> str:
        """The container command line up to the command, from this system's runtime: the image is
        the benchmark's `${container_image}`, the bound folders its `${container_binds}`
        (comma-separated)."""
        flag = "--nv" if self.accelerator == "nvidia" else ""
        line = container_prefix(self.container_runtime, "CARAMEL_IMAGE", "CARAMEL_BIND", flag)
        return line.replace("CARAMEL_IMAGE", "${container_image}").replace(
            "CARAMEL_BIND", "${container_binds}"
        )


_NOT_PARAMETERS = ("file", "where", "given", "images")  # images: one parameter per stack instead
_FOLDERS = ("image_dir", "data_dir")
_SEPARATORS = {"modules": ","}  # how a list setting's items are joined; " " unless named here


def _parameter_name(setting: str) -> str:
    return "system_name" if setting == "name" else f"system_{setting}"


def _parameter_text(setting: str, value: object) -> str:
    """A setting's value as a parameter's text: folders absolute (a job runs elsewhere: never a
    relative path), modules comma-separated, other lists space-separated, mappings as K=V."""
    if setting in _FOLDERS and value:
        return os.path.abspath(os.path.expanduser(str(value)))
    if isinstance(value, list):
        return _SEPARATORS.get(setting, " ").join(value)
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)
