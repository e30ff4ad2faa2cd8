"""A decoder-only GPT in plain PyTorch that takes Megatron-LM's arguments and prints its log lines.

    torchrun --nproc_per_node 2 -m caramel.payloads.workloads.gpt --num-layers 2 --hidden-size 64 \
        --num-attention-heads 4 --seq-length 64 --micro-batch-size 2 --global-batch-size 8 \
        --train-iters 10 --data-path data/corpus_text_document

One process with `--threads` intra-op threads, or data parallel over torchrun ranks (DDP: gloo on
the CPU, NCCL on GPUs; gradients exchanged once per iteration, not per micro-batch); tensor and
pipeline parallel sizes are accepted for compatibility and must be 1. Warm-up iterations
(--warmup-iters) run first and print no iteration line, so the analysed figures exclude them; every
line covers one iteration, timed from the end of the one before (no barrier). Then `> MFU:` (model
FLOPs against the GEMM rate the same processes measured, `> GEMM rate:`), after `> timed:` (the
counted iterations' wall and CPU seconds: how much of its cores the process had while it was timed).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from caramel.payloads.workloads.common import (
    accumulating,
    add_layout_choice,
    barrier,
    compute_dtype,
    device_time,
    finish,
    gemm_rate,
    init_distributed,
    layout_line,
    utilisation,
    wrap,
)
from caramel.payloads.workloads.mlperf_log import TrainingLog, submission, time_to_train_line
from caramel.payloads.workloads.mlperf_log import add_arguments as add_mlperf_arguments


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


class GPT(nn.Module):
    def __init__(
        self, vocab: int, seq: int, hidden: int, layers: int, heads: int, ffn: int
    ) -> None:
        super().__init__()
        self.embed, self.position = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, ffn) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(hidden), nn.Linear(hidden, vocab, bias=False)
        self.register_buffer(
            "mask", torch.triu(torch.full((seq, seq), float("-inf")), 1), persistent=False
        )

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x, self.mask)
        logits: torch.Tensor = self.head(self.norm(x))
        return logits


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="caramel's small GPT trainer (Megatron-LM arguments)")
    for name, default in [
        ("num-layers", 2),
        ("hidden-size", 64),
        ("num-attention-heads", 4),
        ("seq-length", 64),
        ("micro-batch-size", 2),
        ("global-batch-size", 8),
        ("train-iters", 10),
        ("warmup-iters", 2),
        ("tensor-model-parallel-size", 1),
        ("pipeline-model-parallel-size", 1),
        ("vocab-size", 512),
        ("seed", 1234),
        ("ffn-hidden-size", 0),
        ("max-position-embeddings", 0),
        ("log-interval", 1),
    ]:
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument(
        "--target-loss",
        type=float,
        default=0.0,
        help="train until the eval loss is at most this (--train-iters the limit); 0: "
        "time iterations",
    )
    p.add_argument("--eval-interval", type=int, default=10, help="iterations between evaluations")
    p.add_argument("--eval-iters", type=int, default=4, help="micro-batches of one evaluation")
    add_mlperf_arguments(p, "caramel_gpt")  # not MLPerf's GPT-3: its own name
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda (one GPU per process, NCCL)")
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="intra-op threads per process (0: see docs/benchmarks.md)",
    )
    add_layout_choice(p)
    p.add_argument(
        "--data-path",
        type=Path,
        default=None,
        help="prefix of a .bin/.idx corpus; synthetic without",
    )
    p.add_argument(
        "--fp16", action="store_true", help="mixed precision, float16 (on a GPU; see compute_dtype)"
    )
    p.add_argument(
        "--bf16",
        action="store_true",
        help="mixed precision, bfloat16 (on a GPU; see compute_dtype)",
    )
    args, _megatron_only = p.parse_known_args(argv)  # other Megatron flags are accepted and ignored
    return args


Batches = Iterator[tuple[torch.Tensor, torch.Tensor]]  # (input, target) micro-batches


def batches(args: argparse.Namespace, rank: int, micro: int, block: int = 256) -> Batches:
    """Endless (input, target) micro-batches for this rank, from the corpus or synthetic tokens.
    They are cut `block` micro-batches at a time (one random draw, one gather): one by one, drawing
    and stacking cost 45 us a micro-batch, 0.6 % of a timed iteration of the local shape; cut so, 12
    us."""
    rng = np.random.default_rng(args.seed + rank)
    if args.data_path is not None:
        from caramel.payloads.workloads.data import read_tokens

        tokens = read_tokens(args.data_path).astype(np.int64) % args.vocab_size
    else:
        tokens = rng.integers(0, args.vocab_size, size=args.seq_length * 64 + 1)
    window = np.arange(args.seq_length + 1)
    while True:
        starts = rng.integers(0, len(tokens) - args.seq_length - 1, size=block * micro)
        chunks = torch.from_numpy(tokens[starts[:, None] + window])
        for first in range(0, block * micro, micro):
            chunk = chunks[first : first + micro]
            yield chunk[:, :-1], chunk[:, 1:]


def flops_per_iteration(args: argparse.Namespace) -> float:
    """Megatron's model-FLOPs estimate (forward + backward, no recomputation) for one global
    batch."""
    b, s, layers, h, v = (
        args.global_batch_size,
        args.seq_length,
        args.num_layers,
        args.hidden_size,
        args.vocab_size,
    )
    flops: float = 72.0 * b * s * layers * h * h * (1 + s / (6 * h) + v / (12 * h * layers))
    return flops


class Precision:
    """Mixed precision as Megatron's --fp16/--bf16 ask: autocast to `dtype`, and for float16 a
    gradient scaler (its range is too small for unscaled gradients); float32 is a no-op."""

    def __init__(self, device: torch.device, dtype: torch.dtype) -> None:
        self.device, self.dtype = device, dtype
        self.scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)

    def autocast(self) -> torch.autocast:
        return torch.autocast(
            self.device.type, dtype=self.dtype, enabled=self.dtype != torch.float32
        )


def train_step(
    model: nn.Module,
    optimiser: torch.optim.Optimizer,
    data: Batches,
    device: torch.device,
    accumulation: int,
    precision: Precision | None = None,
) -> torch.Tensor:
    """One iteration: `accumulation` micro-batches, gradients exchanged once (on the last), one
    step."""
    precision = precision or Precision(device, torch.float32)
    optimiser.zero_grad(set_to_none=True)
    for micro in range(accumulation):
        inputs, targets = (t.to(device, non_blocking=True) for t in next(data))
        with accumulating(model, last=micro == accumulation - 1):
            with precision.autocast():
                logits = model(inputs).flatten(0, 1)
            loss = nn.functional.cross_entropy(logits.float(), targets.flatten()) / accumulation
            # torch's backward is not annotated
            precision.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
    precision.scaler.step(optimiser)
    precision.scaler.update()
    return loss.detach() * accumulation


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.tensor_model_parallel_size != 1 or args.pipeline_model_parallel_size != 1:
        raise SystemExit(
            "caramel's GPT trainer runs data parallel only: tensor/pipeline parallel size must be 1"
        )
    rank, world, device = init_distributed(args.device, args.threads)
    if args.global_batch_size % (args.micro_batch_size * world):
        raise SystemExit(
            f"--global-batch-size {args.global_batch_size} is not a multiple of "
            f"micro batch {args.micro_batch_size} x data parallel {world}"
        )
    if args.target_loss > 0:
        train_to_target(args, rank, world, device)
        finish()
        return
    times, gemm = train(args, rank, world, device)
    finish()  # after train() returned: its DDP model, which holds the process group, is gone
    if rank == 0:
        print(utilisation(flops_per_iteration(args), times, gemm).line(), flush=True)


def train(
    args: argparse.Namespace, rank: int, world: int, device: torch.device
) -> tuple[list[float], float]:
    """Model, warm-up, the node's GEMM rate, the timed iterations: (their seconds, the GEMM
    rate)."""
    accumulation = args.global_batch_size // (args.micro_batch_size * world)
    torch.manual_seed(args.seed)
    model: nn.Module = GPT(
        args.vocab_size,
        args.seq_length,
        args.hidden_size,
        args.num_layers,
        args.num_attention_heads,
        args.ffn_hidden_size or 4 * args.hidden_size,
    )
    parameters = sum(p.numel() for p in model.parameters())
    model = wrap(model, device, world)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = batches(args, rank, args.micro_batch_size)
    precision = Precision(device, compute_dtype(device, args.fp16, args.bf16))
    if rank == 0:
        print(
            f"> GPT: {parameters} parameters, data parallel {world}, "
            f"gradient accumulation {accumulation}\n"
            f"{layout_line(world, device, args.layout_choice)}",
            flush=True,
        )
    for step in range(args.warmup_iters):
        start = device_time(device)
        train_step(model, optimiser, data, device, accumulation, precision)
        if rank == 0:
            print(
                f" warm-up {step + 1} of {args.warmup_iters} (not counted): "
                f"{device_time(device) - start:.3f} s",
                flush=True,
            )
    gemm = gemm_rate(device, dtype=precision.dtype)
    if rank == 0:
        dtype = str(precision.dtype).removeprefix("torch.")
        print(
            f"> GEMM rate: {gemm / 1e9:.3f} GFLOP/s ({dtype}, all {world} process(es) at once)",
            flush=True,
        )
    cpu = time.process_time()
    times = timed_iterations(
        args, model, optimiser, data, device, accumulation, rank, world, precision
    )
    if rank == 0:
        print(timed_line(times, time.process_time() - cpu, torch.get_num_threads()), flush=True)
    return times, gemm


def timed_line(times: list[float], cpu_s: float, threads: int) -> str:
    """`> timed:` the counted iterations' wall seconds and this process's CPU seconds over them (all
    its threads): a CPU share well under the threads means other work took the cores while it was
    timed."""
    wall = sum(times)
    share = cpu_s / wall / threads if wall > 0 and threads > 0 else 0.0
    return (
        f"> timed: {len(times)} iterations in {wall:.3f} s, CPU {cpu_s:.3f} s of this process "
        f"({100 * share:.0f} % of its {threads} thread(s))"
    )


def timed_iterations(
    args: argparse.Namespace,
    model: nn.Module,
    optimiser: torch.optim.Optimizer,
    data: Batches,
    device: torch.device,
    accumulation: int,
    rank: int,
    world: int,
    precision: Precision | None = None,
) -> list[float]:
    """The counted iterations, each timed from the end of the one before; rank 0 prints Megatron's
    line."""
    barrier()
    times, last = [], device_time(device)
    for done in range(1, args.train_iters + 1):
        loss = train_step(model, optimiser, data, device, accumulation, precision)
        now = device_time(device)
        elapsed, last = now - last, now
        times.append(elapsed)
        if rank == 0:
            tflops = flops_per_iteration(args) / elapsed / world / 1e12
            print(
                f" iteration {done:8d}/{args.train_iters:8d} | consumed samples: "
                f"{done * args.global_batch_size:12d}"
                f" | elapsed time per iteration (s): {elapsed:.4f} | learning rate: {args.lr:.3E}"
                f" | global batch size: {args.global_batch_size:5d} | lm loss: {loss.item():.6E}"
                f" | TFLOPs: {tflops:.6f} |",
                flush=True,
            )
    return times


def eval_loss(model: nn.Module, data: Any, device: torch.device, micro_batches: int) -> float:
    """Mean loss over `micro_batches` held-out micro-batches (the eval stream has its own seed)."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(micro_batches):
            inputs, targets = (t.to(device) for t in next(data))
            logits = model(inputs).flatten(0, 1)
            total += float(nn.functional.cross_entropy(logits.float(), targets.flatten()))
    model.train()
    return total / micro_batches


def train_to_target(args: argparse.Namespace, rank: int, world: int, device: torch.device) -> None:
    """MLPerf's run: blocks of --eval-interval iterations, an evaluation after each, until the eval
    loss is at most --target-loss (or --train-iters ran); prints throughput and time to train."""
    log = TrainingLog(args.mllog_file, rank, submission(args))
    accumulation = args.global_batch_size // (args.micro_batch_size * world)
    torch.manual_seed(args.seed)
    model = wrap(
        GPT(
            args.vocab_size,
            args.seq_length,
            args.hidden_size,
            args.num_layers,
            args.num_attention_heads,
            args.ffn_hidden_size or 4 * args.hidden_size,
        ),
        device,
        world,
    )
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = batches(args, rank, args.micro_batch_size)
    held_out = batches(argparse.Namespace(**{**vars(args), "seed": args.seed + 10_000}), 0, 1)
    log.hyperparameters(
        {
            "seed": args.seed,
            "global_batch_size": args.global_batch_size,
            "micro_batch_size": args.micro_batch_size,
            "gradient_accumulation_steps": accumulation,
            "max_sequence_length": args.seq_length,
            "train_samples": args.train_iters * args.global_batch_size,
            "eval_samples": args.eval_iters,
            "opt_name": "adamw",
            "opt_base_learning_rate": args.lr,
        }
    )
    barrier()
    log.start_run()
    quality, done = float("inf"), 0
    while quality > args.target_loss and done < args.train_iters:
        block = min(args.eval_interval, args.train_iters - done)
        log.start("block_start", {"samples_count": done * args.global_batch_size})
        for _ in range(block):
            train_step(model, optimiser, data, device, accumulation)
        done += block
        samples = {"samples_count": done * args.global_batch_size}
        log.end("block_stop", samples)
        quality = eval_loss(model, held_out, device, args.eval_iters)
        log.evaluation(quality, samples)
        if rank == 0:
            print(
                f" iteration {done:8d}/{args.train_iters:8d} | eval loss: {quality:.6E}", flush=True
            )
    reached = quality <= args.target_loss
    seconds = log.stop_run(reached)
    if rank == 0:
        tokens = done * args.global_batch_size * args.seq_length
        print(
            f"> tokens/s: {tokens / seconds:.1f}\n"
            + time_to_train_line(seconds, reached, quality, f"eval loss {args.target_loss}"),
            flush=True,
        )


if __name__ == "__main__":
    main()
