"""`bench system detect`'s software stack: versions from nvidia-smi, nvcc, headers and wheels, and
what a backend misses (the crowd-benchmarking's detect CUDA / cuDNN / TensorRT steps)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.adapters.systems import stack
from caramel.adapters.systems.stack import Component


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with nothing: no commands, headers, wheels, CUDA or ROCm folders."""
    monkeypatch.setattr(stack, "ask", lambda *command: None)
    monkeypatch.setattr(stack, "INCLUDES", (tmp_path / "include",))
    monkeypatch.setattr(stack, "CUDA_HOME", tmp_path / "cuda")
    monkeypatch.setattr(stack, "ROCM_HOME", tmp_path / "rocm")

    def no_wheel(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(stack.metadata, "version", no_wheel)
    return tmp_path


def versions() -> dict[Component, str]:
    return {found.component: found.version for found in stack.software_stack()}


def test_nothing_found_and_cuda_backend_misses_all(machine: Path) -> None:
    assert set(versions().values()) == {""}
    lines = stack.comment_lines(stack.software_stack(), "onnxruntime-cuda")
    assert lines[-1] == "# onnxruntime-cuda needs driver, CUDA, cuDNN: MISSING driver, CUDA, cuDNN"
    assert stack.missing_for("pytorch-cpu", stack.software_stack()) == []


def test_versions_from_smi_nvcc_headers_and_rocm(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = {
        "nvidia-smi": "550.54.15\n",
        "nvcc": "Cuda compilation tools, release 12.4, V12.4.131\n",
    }
    monkeypatch.setattr(stack, "ask", lambda *c: answers.get(c[0]))
    (machine / "include").mkdir()
    (machine / "include" / "cudnn_version.h").write_text(
        "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
    )
    (machine / "rocm" / ".info").mkdir(parents=True)
    (machine / "rocm" / ".info" / "version").write_text("6.1.2-100\n")
    found = versions()
    assert found[Component.DRIVER] == "550.54.15"
    assert found[Component.CUDA] == "12.4"
    assert found[Component.CUDNN] == "9.1.0"
    assert found[Component.ROCM] == "6.1.2-100"
    assert found[Component.TENSORRT] == ""
    assert stack.missing_for("tensorrt", stack.software_stack()) == [Component.TENSORRT]
    assert stack.comment_lines(stack.software_stack(), "onnxruntime-cuda")[-1].endswith("all found")


def test_cuda_and_tensorrt_from_wheels(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = {"nvidia-cuda-runtime-cu12": "12.8.90", "tensorrt": "10.3.0"}

    def version(name: str) -> str:
        if name in wheels:
            return wheels[name]
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(stack.metadata, "version", version)
    found = {f.component: f for f in stack.software_stack()}
    assert (found[Component.CUDA].version, found[Component.CUDA].source) == (
        "12.8.90",
        "pip nvidia-cuda-runtime-cu12",
    )
    assert found[Component.TENSORRT].version == "10.3.0"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 999), min_size=3, max_size=3), st.text(max_size=40))
def test_header_version_property(
    tmp_path_factory: pytest.TempPathFactory, parts: list[int], noise: str
) -> None:
    # TensorRT's NvInferVersion.h: NV_TENSORRT_MAJOR / MINOR / PATCH, whatever else the file holds
    folder = tmp_path_factory.mktemp("inc")
    macros = ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH")
    text = (
        noise.replace("#", "")
        + "\n"
        + "".join(f"#define {m} {p} // {m}\n" for m, p in zip(macros, parts, strict=True))
    )
    (folder / "NvInferVersion.h").write_text(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stack, "INCLUDES", (folder,))
        found = stack._header(Component.TENSORRT)
    assert found is not None and found.version == ".".join(map(str, parts))
