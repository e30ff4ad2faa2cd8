"""One small class per container runtime, each turning (image, binds, command) into a command line.

A system names its runtime; the job wrapper asks it for the line that runs a step's command.
Apptainer runs a .sif image (`--nv` for NVIDIA devices); charliecloud runs an unpacked root
filesystem with `ch-run` (it needs `$USER` set, and /sys and /etc/passwd inside the image).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass
class Apptainer:
    executable: str = "apptainer"
    gpu_flag: str = ""  # "--nv" (NVIDIA) or "--rocm"; empty on CPU-only systems

    def command(self, image: str, command: list[str], binds: tuple[str, ...] = ()) -> list[str]:
        line = [self.executable, "exec"]
        if binds:
            line.append("--bind=" + ",".join(binds))
        if self.gpu_flag:
            line.append(self.gpu_flag)
        return [*line, image, *command]


@dataclass
class Charliecloud:
    executable: str = "ch-run"

    def command(self, image: str, command: list[str], binds: tuple[str, ...] = ()) -> list[str]:
        line = [self.executable]
        for bind in (b for given in binds for b in given.split(",") if b):
            line += ["-b", bind if ":" in bind else f"{bind}:{bind}"]
        return [*line, image, "--", *command]


Runtime = Apptainer | Charliecloud
RUNTIMES: dict[str, type[Runtime]] = {"apptainer": Apptainer, "charliecloud": Charliecloud}


def runtime(name: str, **options: str) -> Runtime:
    """The runtime called `name`; a ValueError names the known ones."""
    if name not in RUNTIMES:
        raise ValueError(
            f"unknown container runtime {name!r}; expected one of {', '.join(sorted(RUNTIMES))}"
        )
    return RUNTIMES[name](**options)


def shell_line(words: list[str]) -> str:
    return shlex.join(words)


def container_prefix(name: str, image: str, bind: str = "", gpu_flag: str = "") -> str:
    """The runtime's command line up to the command, as one shell string: what benchmark files put
    before the command they run (`container_prefix('apptainer', IMG, ROOT, '--nv')`)."""
    chosen = (
        runtime(name, gpu_flag=gpu_flag) if (gpu_flag and name == "apptainer") else runtime(name)
    )
    return shell_line(chosen.command(image, [], (bind,) if bind else ()))
