#!/usr/bin/env python3
"""A minimal plain-PyTorch training loop of caramel's small ResNet: the reference
perf/resnet_workloads.py holds caramel's ResNet trainer (caramel.payloads.workloads.resnet) against.
No logging, no per-batch timing, synthetic images made up front, caramel's model class (so a
difference is the loop's).

    python perf/plain_resnet.py --threads 2 --batch 8 --batches 100
    torchrun --standalone --nproc_per_node 2 perf/plain_resnet.py --threads 1 --batch 4   # DDP over
    gloo

Prints `plain images/s: N` (all ranks) over the counted batches.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn

from caramel.payloads.workloads.resnet import ResNet


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [
        ("batch", 8),
        ("batches", 100),
        ("warmup", 5),
        ("threads", 1),
        ("image", 32),
        ("width", 16),
    ]:
        p.add_argument(f"--{name}", type=int, default=default)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model: nn.Module = ResNet(width=args.width)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch, 3, args.image, args.image)
    labels = torch.randint(0, 100, (args.batch,))

    def step() -> None:
        optimiser.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(images), labels).backward()
        optimiser.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.batches):
        step()
    seconds = time.perf_counter() - start
    if world > 1:
        dist.destroy_process_group()
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"plain images/s: {args.batch * world * args.batches / seconds:.1f}", flush=True)


if __name__ == "__main__":
    main()
