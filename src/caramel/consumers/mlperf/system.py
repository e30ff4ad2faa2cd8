"""The system description JSON of a submission (`systems/<system>.json`), filled from caramel's
fingerprint of the nodes a run ran on (consumers/history/fingerprint.py) and the software this
Python sees (torch, onnxruntime, their CUDA and cuDNN).

The fields are those MLCommons' submission checker requires (submission_checker/constants.py,
SYSTEM_DESC_REQUIRED_FIELDS); the ones it wants a meaningful answer for and caramel cannot know
(cooling, interconnects, storage) say so in words: "unknown (not detected by caramel)".
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Mapping
from typing import Any

UNKNOWN = "unknown (not detected by caramel)"
FRAMEWORKS = ("torch", "onnxruntime", "onnxruntime-gpu", "mlcommons-loadgen")
# the fields MLCommons requires, each filled below or left as UNKNOWN (the order of its list)
REQUIRED_FIELDS = (
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
)


def framework_versions() -> dict[str, str]:
    """The installed versions of the frameworks a caramel payload may run on (no import)."""
    found = {}
    for name in FRAMEWORKS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def gpu_libraries() -> dict[str, str]:
    """CUDA and cuDNN as the installed torch was built with and finds them (empty on a CPU build or
    without torch)."""
    try:
        import torch
    except ImportError:
        return {}
    found = {}
    if torch.version.cuda:
        found["cuda_runtime"] = torch.version.cuda
    hip = getattr(torch.version, "hip", None)
    if hip:
        found["hip"] = str(hip)
    # torch's cudnn helpers are not annotated
    available = torch.backends.cudnn.is_available()  # type: ignore[no-untyped-call]
    cudnn = torch.backends.cudnn.version() if available else None  # type: ignore[no-untyped-call]
    if cudnn:
        found["cudnn"] = str(cudnn)
    return found


NO_ACCELERATOR = "N/A (no accelerator)"
# the accelerator fields a system without one answers with NO_ACCELERATOR
ACCELERATOR_FIELDS = (
    "accelerator_memory_capacity",
    "accelerator_host_interconnect",
    "accelerator_memory_configuration",
    "accelerator_interconnect",
)
GPU_STACK = ("driver", "cuda", "rocm")  # the fingerprint's keys the software stack names


def describe(
    fingerprint: dict[str, Any],
    division: str,
    submitter: str,
    system_name: str,
    software: dict[str, str],
) -> dict[str, object]:
    """The description: fingerprint keys (cpu_model, cpu_count, memory_gb, gpu_model, gpu_count,
    driver, cuda, rocm) where the probe found them, the frameworks and GPU libraries in
    `software`, every other required field UNKNOWN."""
    described: dict[str, object] = {key: UNKNOWN for key in REQUIRED_FIELDS}
    described |= {
        "division": division,
        "submitter": submitter,
        "status": "available",
        "system_name": system_name,
        "is_network": False,
        "number_of_nodes": 1,
    }
    return (
        described
        | _host(fingerprint)
        | _accelerators(fingerprint)
        | _software(fingerprint, software)
    )


def _host(fingerprint: dict[str, Any]) -> dict[str, object]:
    """The host's fields: one processor per node, its model, cores and memory where probed."""
    memory = fingerprint.get("memory_gb")
    return {
        "host_processor_model_name": fingerprint.get("cpu_model") or UNKNOWN,
        "host_processors_per_node": 1,
        "host_processor_core_count": fingerprint.get("cpu_count") or UNKNOWN,
        "host_memory_capacity": f"{memory} GB" if memory else UNKNOWN,
    }


def _accelerators(fingerprint: dict[str, Any]) -> dict[str, object]:
    """The accelerators' fields: their count and model; none at all: NO_ACCELERATOR for the
    fields about them."""
    gpus = int(fingerprint.get("gpu_count") or 0)
    described: dict[str, object] = {
        "accelerators_per_node": gpus,
        "accelerator_model_name": fingerprint.get("gpu_model") or NO_ACCELERATOR,
    }
    if not gpus:
        described |= dict.fromkeys(ACCELERATOR_FIELDS, NO_ACCELERATOR)
    return described


def _software(fingerprint: dict[str, Any], software: dict[str, str]) -> dict[str, object]:
    """The software's fields: the frameworks of `software`, and the rest of the stack (driver,
    CUDA, ROCm, GPU libraries; none known: the Python version)."""
    frameworks = {key: value for key, value in software.items() if key in FRAMEWORKS}
    return {
        "framework": _versions(frameworks) or UNKNOWN,
        "operating_system": f"{platform.system()} {platform.release()}",
        "system_type": "datacenter",
        "other_software_stack": _versions(_stack(fingerprint, software))
        or f"Python {platform.python_version()}",
        "sw_notes": "run by caramel; fingerprint detected on "
        + str(fingerprint.get("detected_on", "?")),
    }


def _stack(fingerprint: dict[str, Any], software: dict[str, str]) -> dict[str, object]:
    """The software below the frameworks: the fingerprint's driver, CUDA and ROCm, and whatever of
    `software` is no framework (the GPU libraries)."""
    probed = {key: fingerprint[key] for key in GPU_STACK if fingerprint.get(key)}
    return probed | {key: value for key, value in software.items() if key not in FRAMEWORKS}


def _versions(named: Mapping[str, object]) -> str:
    """`name version, name version` ('' for none)."""
    return ", ".join(f"{name} {version}" for name, version in named.items())
