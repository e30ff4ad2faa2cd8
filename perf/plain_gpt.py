#!/usr/bin/env python3
"""A minimal plain-PyTorch training loop of caramel's GPT shape: the reference perf/workloads.py holds
caramel's trainer against. No logging, no per-iteration timing, synthetic tokens made up front.

    python perf/plain_gpt.py --threads 2 --iters 200                    # one process
    torchrun --standalone --nproc_per_node 2 perf/plain_gpt.py --threads 1   # DDP over gloo, no_sync

It uses caramel's model class (caramel.workloads.gpt.GPT), so a difference is the loop's, not the
model's. Prints `plain tokens/s: N` (all ranks) and the seconds of the timed loop.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
from torch import nn

from caramel.workloads.gpt import GPT


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("layers", 2), ("hidden", 64), ("heads", 4), ("seq", 64), ("micro", 2), ("global-batch", 8),
                          ("vocab", 512), ("iters", 200), ("warmup", 5), ("threads", 1)]:
        p.add_argument(f"--{name}", type=int, default=default)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = GPT(args.vocab, args.seq, args.hidden, args.layers, args.heads, 4 * args.hidden)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    accumulation = args.global_batch // (args.micro * world)
    tokens = torch.randint(0, args.vocab, (accumulation, args.micro, args.seq + 1))

    def step() -> None:
        optimiser.zero_grad(set_to_none=True)
        for i in range(accumulation):
            quiet = model.no_sync() if world > 1 and i < accumulation - 1 else contextlib.nullcontext()
            with quiet:
                logits = model(tokens[i, :, :-1])
                loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[i, :, 1:].flatten()) / accumulation
                loss.backward()
        optimiser.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.iters):
        step()
    seconds = time.perf_counter() - start
    if world == 1 or dist.get_rank() == 0:
        print(f"plain tokens/s: {args.iters * args.global_batch * args.seq / seconds:.1f}\nplain seconds: {seconds:.3f}",
              flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
