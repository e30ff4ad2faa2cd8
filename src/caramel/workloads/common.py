"""What both trainers share: the device (CPU, or one CUDA GPU per process), the torchrun/DDP setup
(gloo on the CPU, NCCL on GPUs) and a timer that waits for all ranks."""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist


def device_plan(requested: str, cuda_devices: int, local_rank: int) -> tuple[str, str]:
    """(device, process-group backend) for `--device auto|cpu|cuda`: one GPU per process (the
    process's LOCAL_RANK), NCCL between GPUs, gloo on the CPU. Asking for CUDA without it is an error."""
    if requested not in ("auto", "cpu", "cuda"):
        raise SystemExit(f"--device {requested}: expected auto, cpu or cuda")
    if requested == "cpu" or (requested == "auto" and cuda_devices == 0):
        return "cpu", "gloo"
    if cuda_devices == 0:
        raise SystemExit("--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is false); "
                         "run on a GPU machine with a CUDA build of torch, or use --device cpu")
    if local_rank >= cuda_devices:
        raise SystemExit(f"process {local_rank} has no GPU of its own: {cuda_devices} visible; start at most "
                         f"{cuda_devices} processes per node (--nproc_per_node)")
    return f"cuda:{local_rank}", "nccl"


def init_distributed(requested: str = "cpu") -> tuple[int, int, torch.device]:
    """(rank, world size, device); joins the torchrun process group when started by torchrun."""
    torch.set_num_threads(1 if "LOCAL_RANK" in os.environ else max(1, torch.get_num_threads()))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda_devices = torch.cuda.device_count() if requested != "cpu" and torch.cuda.is_available() else 0
    name, backend = device_plan(requested, cuda_devices, local_rank)
    device = torch.device(name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1:
        dist.init_process_group(backend, device_id=device if device.type == "cuda" else None)
        return dist.get_rank(), dist.get_world_size(), device
    return 0, 1, device


def wrap(model: torch.nn.Module, device: torch.device, world: int) -> torch.nn.Module:
    """The model on its device, in DDP across the ranks (one GPU per rank on CUDA)."""
    model = model.to(device)
    if world == 1:
        return model
    ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)


def synchronised_time() -> float:
    """Wall time after every rank reached this point (and its GPU finished its work), so one
    iteration's time is the slowest rank's."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    if dist.is_initialized():
        dist.barrier()
    return time.perf_counter()


def finish() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
