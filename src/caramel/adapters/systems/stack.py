"""The accelerator software stack here: driver, CUDA, cuDNN, TensorRT and ROCm versions, and which
of them a backend needs but this machine lacks (`bench system detect --backend`), as MLCommons'
crowd-benchmarking detects CUDA, cuDNN and TensorRT before it runs.

Each version comes from the first place that answers: the driver from nvidia-smi or the amdgpu
module; CUDA from nvcc or the toolkit's version.json; cuDNN and TensorRT from their headers; each
of CUDA, cuDNN and TensorRT also from the pip wheel that ships it (`nvidia-cuda-runtime-cu12`,
`nvidia-cudnn-cu12`, `tensorrt`), as PyTorch and ONNX Runtime load them from there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from importlib import metadata
from pathlib import Path


class Component(Enum):
    DRIVER = "driver"
    CUDA = "CUDA"
    CUDNN = "cuDNN"
    TENSORRT = "TensorRT"
    ROCM = "ROCm"


# What each inference backend needs beyond itself (its CPU form needs none of these).
NEEDS: dict[str, tuple[Component, ...]] = {
    "pytorch-cpu": (),
    "onnxruntime-cpu": (),
    "pytorch-cuda": (Component.DRIVER, Component.CUDA),
    "onnxruntime-cuda": (Component.DRIVER, Component.CUDA, Component.CUDNN),
    "tensorrt": (Component.DRIVER, Component.CUDA, Component.CUDNN, Component.TENSORRT),
    "pytorch-rocm": (Component.DRIVER, Component.ROCM),
}

CUDA_HOME = Path("/usr/local/cuda")
INCLUDES = (Path("/usr/include"), CUDA_HOME / "include", Path("/usr/include/x86_64-linux-gnu"))
ROCM_HOME = Path("/opt/rocm")
WHEELS = {
    Component.CUDA: ("nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11"),
    Component.CUDNN: ("nvidia-cudnn-cu12", "nvidia-cudnn-cu11"),
    Component.TENSORRT: ("tensorrt", "tensorrt-cu12"),
}
HEADERS = {  # the header and its version macros (major, minor, patch)
    Component.CUDNN: ("cudnn_version.h", ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")),
    Component.TENSORRT: (
        "NvInferVersion.h",
        ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH"),
    ),
}


def ask(*command: str) -> str | None:
    """The command's stdout, or None when it is missing, fails or hangs (the schedulers' ask,
    imported here: `bench --help` imports this module for --backend's choices)."""
    from caramel.adapters.backends import schedulers

    return schedulers.ask(*command)


@dataclass(frozen=True)
class Found:
    component: Component
    version: str  # "" when absent
    source: str  # where the version was read, or where caramel looked


def _wheel(component: Component) -> Found | None:
    for name in WHEELS.get(component, ()):
        try:
            return Found(component, metadata.version(name), f"pip {name}")
        except metadata.PackageNotFoundError:
            continue
    return None


def _header(component: Component) -> Found | None:
    name, macros = HEADERS[component]
    for folder in INCLUDES:
        path = folder / name
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        parts = [re.search(rf"#define\s+{m}\s+(\d+)", text) for m in macros]
        if all(parts):
            return Found(component, ".".join(p.group(1) for p in parts if p), str(path))
    return None


def _driver() -> Found | None:
    out = ask("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    if out and out.strip():
        return Found(Component.DRIVER, out.strip().splitlines()[0], "nvidia-smi")
    amdgpu = Path("/sys/module/amdgpu/version")
    if amdgpu.is_file():
        return Found(Component.DRIVER, amdgpu.read_text().strip(), str(amdgpu))
    return None


def _cuda() -> Found | None:
    out = ask("nvcc", "--version")
    match = re.search(r"release (\d+\.\d+)", out or "")
    if match:
        return Found(Component.CUDA, match.group(1), "nvcc")
    version_json = CUDA_HOME / "version.json"
    if version_json.is_file():
        try:
            version = json.loads(version_json.read_text())["cuda"]["version"]
            return Found(Component.CUDA, str(version), str(version_json))
        except (ValueError, KeyError, TypeError):
            pass
    return _wheel(Component.CUDA)


def _rocm() -> Found | None:
    info = ROCM_HOME / ".info" / "version"
    if info.is_file():
        return Found(Component.ROCM, info.read_text().strip(), str(info))
    return None


def _find(component: Component) -> Found | None:
    if component is Component.DRIVER:
        return _driver()
    if component is Component.CUDA:
        return _cuda()
    if component is Component.ROCM:
        return _rocm()
    return _header(component) or _wheel(component)


def software_stack() -> list[Found]:
    """Each component's version here, or an empty version where none answered."""
    return [_find(c) or Found(c, "", "not found") for c in Component]


def missing_for(backend: str, stack: list[Found]) -> list[Component]:
    """The components `backend` (a key of NEEDS) needs that `stack` lacks."""
    have = {found.component for found in stack if found.version}
    return [c for c in NEEDS[backend] if c not in have]


def comment_lines(stack: list[Found], backend: str | None) -> list[str]:
    """The stack as comment lines of a draft system file, and what `backend` would miss."""
    lines = ["# software stack (bench system detect):"]
    for found in stack:
        text = f"{found.version} ({found.source})" if found.version else "not found"
        lines.append(f"#   {found.component.value}: {text}")
    if backend:
        missing = missing_for(backend, stack)
        lines.append(
            f"# {backend} needs "
            + (", ".join(c.value for c in NEEDS[backend]) or "none of these")
            + (f": MISSING {', '.join(c.value for c in missing)}" if missing else ": all found")
        )
    return lines
