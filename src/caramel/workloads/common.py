"""What both trainers share: the torchrun/DDP setup on gloo and a timer that waits for all ranks."""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist


def init_distributed() -> tuple[int, int]:
    """(rank, world size); joins the torchrun process group (gloo, CPU) when started by torchrun."""
    torch.set_num_threads(1 if "LOCAL_RANK" in os.environ else max(1, torch.get_num_threads()))
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1:
        dist.init_process_group("gloo")
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def synchronised_time() -> float:
    """Wall time after every rank reached this point, so one iteration's time is the slowest rank's."""
    if dist.is_initialized():
        dist.barrier()
    return time.perf_counter()


def finish() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
