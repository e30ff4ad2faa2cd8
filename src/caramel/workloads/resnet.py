"""A ResNet in plain PyTorch that takes tf_cnn_benchmarks' arguments and prints its log lines.

    torchrun --nproc_per_node 2 -m caramel.workloads.resnet --batch_size 4 --num_batches 10

Synthetic images and labels (as CARAML's `synthetic` runs), data parallel over torchrun ranks (DDP,
gloo). `--batch_size` is per device, as in tf_cnn_benchmarks. Warm-up batches (--num_warmup_batches)
are timed but excluded; the figure is `total images/sec` over the counted batches, all devices.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from caramel.workloads.common import finish, init_distributed, synchronised_time, wrap


class BasicBlock(nn.Module):
    def __init__(self, channels_in: int, channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or channels_in != channels:
            self.shortcut = nn.Sequential(nn.Conv2d(channels_in, channels, 1, stride, bias=False),
                                          nn.BatchNorm2d(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet with basic blocks: `blocks` per stage, widths doubling from `width`."""

    def __init__(self, blocks: tuple[int, ...] = (1, 1, 1, 1), width: int = 16, classes: int = 100) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, channels = [], width
        for stage, count in enumerate(blocks):
            out = width * 2 ** stage
            for i in range(count):
                layers.append(BasicBlock(channels, out, 2 if (i == 0 and stage > 0) else 1))
                channels = out
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="caramel's small ResNet trainer (tf_cnn_benchmarks arguments)")
    p.add_argument("--batch_size", type=int, default=4, help="per device")
    p.add_argument("--num_batches", type=int, default=10)
    p.add_argument("--num_warmup_batches", type=int, default=2)
    p.add_argument("--image_size", type=int, default=32)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--display_every", type=int, default=1)
    p.add_argument("--model", default="resnet_small")
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda (one GPU per process, NCCL)")
    args, _tf_only = p.parse_known_args(argv)  # --variable_update, --use_fp16, ... are ignored
    rank, world, device = init_distributed(args.device)
    torch.manual_seed(1234 + rank)
    model = ResNet(width=args.width)
    model = wrap(model, device, world)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size).to(device)
    labels = torch.randint(0, 100, (args.batch_size,)).to(device)
    if rank == 0:
        print(f"Model:       {args.model}\nBatch size:  {args.batch_size * world} global\n"
              f"             {args.batch_size} per device\nNum devices: {world}\n"
              f"Step\tImg/sec\ttotal_loss", flush=True)
    counted = 0.0
    for step in range(args.num_warmup_batches + args.num_batches):
        start = synchronised_time()
        optimiser.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimiser.step()
        elapsed = synchronised_time() - start
        if step >= args.num_warmup_batches:
            counted += elapsed
            done = step + 1 - args.num_warmup_batches
            if rank == 0 and done % args.display_every == 0:
                print(f"{done}\timages/sec: {args.batch_size * world / elapsed:.1f} +/- 0.0 (jitter = 0.0)\t"
                      f"{loss.item():.3f}", flush=True)
    if rank == 0:
        print("-" * 40 + f"\ntotal images/sec: {args.batch_size * world * args.num_batches / counted:.2f}\n"
              + "-" * 40, flush=True)
    finish()


if __name__ == "__main__":
    main()
