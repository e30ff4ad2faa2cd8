"""Device selection of caramel's trainers (the CUDA path is planned here; no GPU on this machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from caramel.payloads.workloads.common import device_plan  # noqa: E402


def test_device_plan() -> None:
    assert device_plan("cpu", 8, 3) == ("cpu", "gloo")
    assert device_plan("auto", 0, 0) == ("cpu", "gloo")
    assert device_plan("auto", 4, 2) == ("cuda:2", "nccl")
    assert device_plan("cuda", 8, 7) == ("cuda:7", "nccl")
    with pytest.raises(SystemExit, match="no CUDA device"):
        device_plan("cuda", 0, 0)
    with pytest.raises(SystemExit, match="has no GPU of its own: 2 visible"):
        device_plan("cuda", 2, 2)
    with pytest.raises(SystemExit, match="expected auto, cpu or cuda"):
        device_plan("gpu", 1, 0)


def test_llm_localgpu_plans_one_process_per_gpu_with_nccl_and_pynvml(tmp_path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "localgpu.yaml").write_text("scheduler: local\ngpus_per_node: 4\nenergy_method: pynvml\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    done = subprocess.run([sys.executable, "-m", "caramel", "plan", "llm", "--tag", "800M", "localgpu", "--systems",
                           str(site), "--format", "json"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    p = json.loads(done.stdout)["workpackages"][0]["parameters"]
    assert (p["nhidden"], p["nlayers"], p["gpus_per_node"], p["dp_size"]) == (2048, 16, 4, 4)
    command = p["local_command"]
    assert "--method pynvml" in command and "--nproc_per_node 4" in command
    assert command.endswith("--device cuda") and "sbatch" not in command
    assert p["model_size"] == "800M"  # the size's own dimensions run on GPUs: CARAML's name is right


def plan_local(tmp_path, benchmark: str, tags: list[str], layout: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    env["CARAMEL_CPU_LAYOUT"] = layout
    done = subprocess.run([sys.executable, "-m", "caramel", "plan", benchmark, "--tag", *tags, "--format", "json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["workpackages"][0]["parameters"]


@pytest.mark.parametrize(("layout", "launcher"), [("1x2", " -m caramel.payloads.workloads.gpt "),
                                                  ("2x1", " -m torch.distributed.run --standalone --nproc_per_node 2 ")])
def test_llm_local_follows_the_layout_and_names_the_tiny_shape(tmp_path, layout: str, launcher: str) -> None:
    p = plan_local(tmp_path, "llm", ["117M", "local"], layout)
    processes, threads = map(int, layout.split("x"))
    assert p["model_size"] == "tiny-2x64" and p["llm_model_size"] == "117M"  # the tag is not the model's size
    assert (p["gpus_per_node"], p["dp_size"], p["global_batch_size"]) == (processes, processes, 8)
    assert launcher in p["local_command"] and p["local_command"].endswith(
        f"--threads {threads} --warmup-iters 5 --layout-choice '{layout} (CARAMEL_CPU_LAYOUT)'")
    assert p["cpu_layout_choice"] == f"{layout} (CARAMEL_CPU_LAYOUT)"  # the plan shows what chose the layout
    assert p["train_iters"] == 1500  # the README's job: training, not start-up, fills it (docs/benchmarks.md)
    assert plan_local(tmp_path, "llm", ["117M", "local", "smoke"], layout)["train_iters"] == 60  # the tests' job


def test_resnet_local_follows_the_layout(tmp_path) -> None:
    p = plan_local(tmp_path, "resnet50", ["local"], "1x2")
    assert (p["taskspernode"], p["threadspertask"], p["batch_size_per_device"]) == (1, 2, 8)
    assert "torch.distributed.run" not in p["local_command"] and "--threads 2" in p["local_command"]
    assert p["local_command"].endswith("--layout-choice '1x2 (CARAMEL_CPU_LAYOUT)'")


@pytest.mark.slow
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, "-m", "caramel.payloads.workloads.gpt", "--device", "cuda", "--train-iters", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "torch sees no CUDA device here" in done.stderr and "Traceback" not in done.stderr
