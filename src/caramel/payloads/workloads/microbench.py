"""Microbenchmarks of the kernels a training iteration is made of, one case per process.

    python -m caramel.payloads.workloads.microbench gemm:512x256x1024:float32 [--threads N]
    [--seconds S] python -m caramel.payloads.workloads.microbench copy:4194304
    python -m caramel.payloads.workloads.microbench eltwise:4194304:bfloat16
    python -m caramel.payloads.workloads.microbench conv:8x64x32:3
    python -m caramel.payloads.workloads.microbench attention:32x64x64:bfloat16   (and
    attention_backward:...) python -m torch.distributed.run --standalone --nproc_per_node 2 -m
    caramel.payloads.workloads.microbench allreduce:1048576

A case is `KIND:SHAPE[:EXTRA]` (docs/microbench.md): gemm `MxNxK:DTYPE` (an (M,K) by (K,N)
product), copy `BYTES` (read + write of a float32 buffer), eltwise `BYTES:DTYPE` (a + b of
tensors of BYTES in the dtype), conv `BATCHxCHANNELSxSIZE:KERNEL` (a
same-padded 2-D convolution, forward), attention / attention_backward `BHxSxD:DTYPE` (the fused
scaled-dot-product attention of BH heads x sequences, S tokens, head width D, under an additive
causal mask as nn.MultiheadAttention passes it: forward, or the backward of all three inputs),
allreduce / allgather `BYTES` over the torchrun ranks (gloo on the CPU, NCCL on GPUs). The case runs
repeatedly for about `--seconds`; the best repeat counts (on a shared machine the others measure the
neighbours). It prints `> microbench KIND: seconds T` and the rate (`GFLOP/s` or `GB/s`).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def dims(text: str) -> list[int]:
    return [int(x) for x in text.split("x")]


def gemm(
    shape: str, dtype: str = "float32", *, device: str = "cpu"
) -> tuple[Callable[[], object], float, str]:
    m, n, k = dims(shape)
    a = torch.randn(m, k, dtype=DTYPES[dtype], device=device)
    b = torch.randn(k, n, dtype=DTYPES[dtype], device=device)
    return (lambda: torch.matmul(a, b)), 2.0 * m * n * k / 1e9, "GFLOP/s"


def copy(size: str, *, device: str = "cpu") -> tuple[Callable[[], object], float, str]:
    count = max(1, int(size) // 4)
    source, target = torch.randn(count, device=device), torch.empty(count, device=device)
    return (lambda: target.copy_(source)), 2.0 * count * 4 / 1e9, "GB/s"


def eltwise(
    size: str, dtype: str = "float32", *, device: str = "cpu"
) -> tuple[Callable[[], object], float, str]:
    """An element-wise arithmetic pass (a + b into c) over tensors of BYTES in the dtype: what a
    layer norm, GELU or Adam step costs per byte, which a plain copy does not show where the CPU has
    no units for the dtype (bfloat16 converted to float32 and back)."""
    count = max(1, int(size) // DTYPES[dtype].itemsize)
    a, b = (
        torch.randn(count, device=device).to(DTYPES[dtype]),
        torch.randn(count, device=device).to(DTYPES[dtype]),
    )
    c = torch.empty_like(a)
    return (lambda: torch.add(a, b, out=c)), 3.0 * int(size) / 1e9, "GB/s"


def conv(
    shape: str, kernel: str = "3", *, device: str = "cpu"
) -> tuple[Callable[[], object], float, str]:
    batch, channels, size = dims(shape)
    k = int(kernel)
    layer = torch.nn.Conv2d(channels, channels, k, padding=k // 2, bias=False).to(device)
    x = torch.randn(batch, channels, size, size, device=device)
    flops = 2.0 * batch * channels * channels * k * k * size * size
    return (lambda: layer(x)), flops / 1e9, "GFLOP/s"


def attention(
    shape: str, dtype: str = "float32", backward: bool = False, *, device: str = "cpu"
) -> tuple[Callable[[], object], float, str]:
    """The fused attention a transformer layer calls (torch's scaled_dot_product_attention): its
    cost is not that of its products (the softmax between them, blocking; on a CPU without bfloat16
    units the backward in bfloat16 takes ~9x its products' time), so the suite times it as a
    kernel."""
    heads, seq, width = dims(shape)
    kind = DTYPES[dtype]
    q, k, v = (
        torch.randn(1, heads, seq, width, device=device).to(kind).requires_grad_() for _ in range(3)
    )
    mask = torch.triu(torch.full((seq, seq), float("-inf"), device=device), 1).to(kind)

    def forward() -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    flops = 4.0 * heads * seq * seq * width  # Q·Kᵀ and P·V
    if not backward:
        return forward, flops / 1e9, "GFLOP/s"
    out = forward()
    grad = torch.randn_like(out)
    run = lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)  # noqa: E731
    return run, 2.5 * flops / 1e9, "GFLOP/s"  # five products: scores again, dV, dP, dQ, dK


def collective(
    kind: str, size: str, *, device: str = "cpu"
) -> tuple[Callable[[], object], float, str]:
    world = dist.get_world_size() if dist.is_initialized() else 1
    count = max(1, int(size) // 4)
    x = torch.randn(count, device=device)
    if kind == "allreduce":
        op = (lambda: dist.all_reduce(x)) if world > 1 else (lambda: x.add_(0))
        moved = 2.0 * (world - 1) / world * count * 4 if world > 1 else count * 4
    else:
        parts = [torch.empty_like(x) for _ in range(world)]
        op = (lambda: dist.all_gather(parts, x)) if world > 1 else (lambda: parts[0].copy_(x))
        moved = (world - 1) * count * 4.0 if world > 1 else count * 4.0
    return op, moved / 1e9, "GB/s"  # bus bandwidth, as nccl-tests count it


def _fields(
    text: str, args: list[str], names: tuple[str, ...], defaults: tuple[str, ...] = ()
) -> list[str]:
    """The fields of a kernel after its kind (`gemm:SHAPE[:DTYPE]`); the last `len(defaults)` may be
    left out."""
    required = len(names) - len(defaults)
    if not required <= len(args) <= len(names):
        kind = text.partition(":")[0]
        shown = ":".join([kind, *names[:required], *(f"[{n}]" for n in names[required:])])
        raise SystemExit(f"microbench: '{text}' is not {shown}")
    return args + list(defaults[len(args) - required :])


def case(text: str, device: str) -> tuple[Callable[[], object], float, str]:
    kind, _, rest = text.partition(":")
    args = rest.split(":") if rest else []
    if kind == "gemm":
        shape, dtype = _fields(text, args, ("SHAPE", "DTYPE"), ("float32",))
        return gemm(shape, dtype, device=device)
    if kind == "copy":
        (size,) = _fields(text, args, ("BYTES",))
        return copy(size, device=device)
    if kind == "eltwise":
        size, dtype = _fields(text, args, ("BYTES", "DTYPE"), ("float32",))
        return eltwise(size, dtype, device=device)
    if kind == "conv":
        shape, kernel = _fields(text, args, ("SHAPE", "KERNEL"), ("3",))
        return conv(shape, kernel, device=device)
    if kind in ("attention", "attention_backward"):
        shape, dtype = _fields(text, args, ("SHAPE", "DTYPE"), ("float32",))
        return attention(shape, dtype, kind == "attention_backward", device=device)
    if kind in ("allreduce", "allgather"):
        (size,) = _fields(text, args, ("BYTES",))
        return collective(kind, size, device=device)
    raise SystemExit(
        f"microbench: unknown kernel kind '{kind}' in '{text}' (gemm, copy, eltwise, conv, "
        "attention, attention_backward, allreduce, allgather)"
    )


def best_time(
    op: Callable[[], object],
    seconds: float,
    device: str,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """The fastest of the repeats that fit in about `seconds` (at least 3). Under torchrun every
    rank runs the same number of repeats (the smallest any rank asks for: a collective must be
    called by all), and the slowest rank's best counts."""

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def timed() -> float:
        if dist.is_initialized():
            dist.barrier()
        start = clock()
        op()
        sync()
        return clock() - start

    op()
    sync()
    first = timed()
    repeats = torch.tensor([max(3, min(10000, int(seconds / max(first, 1e-7))))], dtype=torch.int64)
    if dist.is_initialized():
        dist.all_reduce(repeats, op=dist.ReduceOp.MIN)
    best = min([first] + [timed() for _ in range(int(repeats.item()))])
    if dist.is_initialized():
        worst = torch.tensor([best], dtype=torch.float64)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        best = float(worst.item())
    return best


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = _rank_device(args.device)
    op, work, unit = case(args.case, device)
    clock = time.process_time if args.clock == "process" else time.perf_counter
    seconds = best_time(op, args.seconds, device, clock)
    if not dist.is_initialized() or dist.get_rank() == 0:
        print(
            f"> microbench {args.case} ({torch.get_num_threads()} threads): seconds {seconds:.6e} "
            f"rate {work / seconds:.4f} {unit}",
            flush=True,
        )
    if dist.is_initialized():
        dist.destroy_process_group()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", help="KIND:SHAPE[:EXTRA], e.g. gemm:512x256x1024:float32")
    parser.add_argument(
        "--threads", type=int, default=0, help="intra-op threads (0: torch's default)"
    )
    parser.add_argument("--seconds", type=float, default=0.3, help="time spent repeating the case")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--clock",
        choices=["wall", "process"],
        default="wall",
        help="process: this process's CPU time (one thread on a shared machine: the neighbours' "
        "load is not measured)",
    )
    return parser


def _rank_device(device: str) -> str:
    """This rank's device; where torchrun started the process (LOCAL_RANK), having joined the
    process group (NCCL on GPUs, else Gloo)."""
    if "LOCAL_RANK" not in os.environ:
        return device
    if device.startswith("cuda"):
        device = f"cuda:{int(os.environ['LOCAL_RANK'])}"
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    return device


if __name__ == "__main__":
    main()
