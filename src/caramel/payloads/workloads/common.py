"""What both trainers share: the device (CPU, or one CUDA GPU per process), the torchrun/DDP setup
(gloo on the CPU, NCCL on GPUs), the threads of a CPU process, the clock of the timed iterations,
the node's GEMM rate and the model FLOP utilisation (MFU) against it, and a clean shutdown."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

GEMM_SIZE = {"cpu": 512, "cuda": 4096}  # square float32 matmuls: large enough to run near the peak
GEMM_SECONDS = 0.2  # the whole measurement, all ranks at once (cheap beside the timed iterations)


def device_plan(requested: str, cuda_devices: int, local_rank: int) -> tuple[str, str]:
    """(device, process-group backend) for `--device auto|cpu|cuda`: one GPU per process (the
    process's LOCAL_RANK), NCCL between GPUs, gloo on the CPU. Asking for CUDA without it is an
    error."""
    if requested not in ("auto", "cpu", "cuda"):
        raise SystemExit(f"--device {requested}: expected auto, cpu or cuda")
    if requested == "cpu" or (requested == "auto" and cuda_devices == 0):
        return "cpu", "gloo"
    if cuda_devices == 0:
        raise SystemExit(
            "--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is false); "
            "run on a GPU machine with a CUDA build of torch, or use --device cpu"
        )
    if local_rank >= cuda_devices:
        raise SystemExit(
            f"process {local_rank} has no GPU of its own: {cuda_devices} visible; start at most "
            f"{cuda_devices} processes per node (--nproc_per_node)"
        )
    return f"cuda:{local_rank}", "nccl"


def thread_count(requested: int, under_torchrun: bool) -> int:
    """Intra-op threads of this process: `--threads` when given (the layout the benchmark file
    chose, caramel.payloads.workloads.layout), else torchrun's OMP_NUM_THREADS (1 unless set), else
    the layout rule's."""
    if requested > 0:
        return requested
    if under_torchrun:
        return max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))
    from caramel.payloads.workloads.layout import node_layout

    return node_layout().threads


def init_distributed(requested: str = "cpu", threads: int = 0) -> tuple[int, int, torch.device]:
    """(rank, world size, device); joins the torchrun process group when started by torchrun."""
    torch.set_num_threads(thread_count(threads, "LOCAL_RANK" in os.environ))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda_devices = (
        torch.cuda.device_count() if requested != "cpu" and torch.cuda.is_available() else 0
    )
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


def accumulating(model: torch.nn.Module, last: bool) -> contextlib.AbstractContextManager[object]:
    """The context of one micro-batch's backward: DDP exchanges gradients only on the last
    micro-batch of an iteration (`no_sync` on the others); a single process has nothing to
    exchange."""
    if last or not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return contextlib.nullcontext()
    return model.no_sync()


def device_time(device: torch.device) -> float:
    """Wall time once this process's device finished its queued work. No barrier: the gradient
    all-reduce of every iteration already keeps the ranks in step."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def gemm_rate(
    device: torch.device, seconds: float = GEMM_SECONDS, dtype: torch.dtype = torch.float32
) -> float:
    """The node's GEMM rate in FLOP/s, in the precision the model computes in, as this layout runs
    it: every rank multiplies square matrices at the same time for about `seconds` (the best repeat
    counts), and the ranks' rates add up."""
    n = GEMM_SIZE["cuda" if device.type == "cuda" else "cpu"]
    a, b = (
        torch.randn(n, n, device=device, dtype=dtype),
        torch.randn(n, n, device=device, dtype=dtype),
    )
    torch.matmul(a, b)  # the first call allocates and picks a kernel
    barrier()
    best = float("inf")
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or best == float("inf"):
        start = device_time(device)
        torch.matmul(a, b)
        best = min(best, device_time(device) - start)
    rate = torch.tensor([2.0 * n**3 / best], dtype=torch.float64, device=device)
    if dist.is_initialized():
        dist.all_reduce(rate)
    return float(rate.item())


def compute_dtype(device: torch.device, fp16: bool, bf16: bool) -> torch.dtype:
    """The precision the model's matrix work runs in: Megatron's --fp16/--bf16 (mixed precision
    through autocast) on a GPU; float32 on the CPU, whose half-precision GEMMs are mostly emulated
    and slower (docs/benchmarks.md), so the flags are accepted and ignored there."""
    if device.type != "cuda":
        return torch.float32
    return torch.bfloat16 if bf16 else torch.float16 if fp16 else torch.float32


@dataclass(frozen=True)
class Utilisation:
    model_flops_per_s: float
    gemm_flops_per_s: float

    @property
    def percent(self) -> float:
        """Model FLOP utilisation: the model's FLOP/s over the node's measured GEMM rate, in %."""
        return (
            100.0 * self.model_flops_per_s / self.gemm_flops_per_s
            if self.gemm_flops_per_s > 0
            else 0.0
        )

    def line(self) -> str:
        return (
            f"> MFU: {self.percent:.2f} % (model {self.model_flops_per_s / 1e9:.3f} GFLOP/s of the "
            f"measured GEMM rate {self.gemm_flops_per_s / 1e9:.3f} GFLOP/s)"
        )


def utilisation(
    flops_per_iteration: float, iteration_seconds: list[float], gemm_flops_per_s: float
) -> Utilisation:
    """MFU over the timed iterations: all their model FLOPs over all their time (the mean rate, as
    the table's throughput is), against the GEMM rate of the same processes and threads."""
    total = sum(iteration_seconds)
    return Utilisation(
        flops_per_iteration * len(iteration_seconds) / total if total > 0 else 0.0, gemm_flops_per_s
    )


def layout_line(world: int, device: torch.device, choice: str = "") -> str:
    """What the log shows of the layout: processes and threads per process (or GPUs), and on a CPU
    what chose it (`--layout-choice`, as the benchmark file planned it: `2x1 (measured 2026-11-25:
    ...)`, `1x2 (rule)`, `1x1 (CARAMEL_CPU_LAYOUT)`)."""
    if device.type == "cuda":
        return f"> layout: {world} process(es), one GPU each"
    chosen = f", chosen: {choice}" if choice else ""
    return f"> layout: {world} process(es) x {torch.get_num_threads()} thread(s){chosen}"


def add_layout_choice(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--layout-choice",
        default="",
        metavar="TEXT",
        help="what chose the CPU layout, for the log (the benchmark file passes layout_choice())",
    )


def finish() -> None:
    """End the run so no thread outlives it. Call it once the DDP model is gone (its reducer holds
    the process group and gloo's pending work): what is left of it is collected now, every rank
    reaches the same point, then the process group (gloo's or NCCL's worker threads, the store's
    connection) is torn down while the interpreter is whole. A group left to interpreter shutdown
    can abort there (`terminate called without an active exception`) after the result was
    printed."""
    gc.collect()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
