"""A ResNet in plain PyTorch that takes tf_cnn_benchmarks' arguments and prints its log lines.

    torchrun --nproc_per_node 2 -m caramel.payloads.workloads.resnet --batch_size 4 --num_batches 10

Synthetic images and labels (as CARAML's `synthetic` runs), one process with `--threads` threads or
data parallel over torchrun ranks (DDP, gloo). `--batch_size` is per device, as in tf_cnn_benchmarks.
Warm-up batches (--num_warmup_batches) are excluded; the figure is `total images/sec` over the
counted batches, all devices, then `> MFU:` against the measured `> GEMM rate:`.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from caramel.payloads.workloads.common import (
    add_layout_choice,
    barrier,
    device_time,
    finish,
    gemm_rate,
    init_distributed,
    layout_line,
    utilisation,
    wrap,
)


class BasicBlock(nn.Module):
    def __init__(self, channels_in: int, channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or channels_in != channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels_in, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet with basic blocks: `blocks` per stage, widths doubling from `width`."""

    def __init__(
        self, blocks: tuple[int, ...] = (1, 1, 1, 1), width: int = 16, classes: int = 100
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
        )
        layers, channels = [], width
        for stage, count in enumerate(blocks):
            out = width * 2**stage
            for i in range(count):
                layers.append(BasicBlock(channels, out, 2 if (i == 0 and stage > 0) else 1))
                channels = out
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))
        return logits


def training_flops(model: nn.Module, images: torch.Tensor) -> float:
    """FLOPs of one training step on `images`: the forward pass's convolutions and linear layers
    (2 x multiply-adds) counted with hooks, times 3 (the backward pass costs about twice the forward)."""
    counted = [0.0]

    def count(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            counted[0] += 2.0 * output.numel() * module.in_channels // module.groups * kh * kw
        elif isinstance(module, nn.Linear):
            counted[0] += 2.0 * output.numel() * module.in_features

    hooks = [
        m.register_forward_hook(count)
        for m in model.modules()
        if isinstance(m, (nn.Conv2d, nn.Linear))
    ]
    with torch.no_grad():
        model(images)
    for hook in hooks:
        hook.remove()
    return 3.0 * counted[0]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="caramel's small ResNet trainer (tf_cnn_benchmarks arguments)"
    )
    p.add_argument("--batch_size", type=int, default=4, help="per device")
    p.add_argument("--num_batches", type=int, default=10)
    p.add_argument("--num_warmup_batches", type=int, default=2)
    p.add_argument("--image_size", type=int, default=32)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--display_every", type=int, default=1)
    p.add_argument("--model", default="resnet_small")
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda (one GPU per process, NCCL)")
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="intra-op threads per process (0: see docs/benchmarks.md)",
    )
    add_layout_choice(p)
    args, _tf_only = p.parse_known_args(argv)  # --variable_update, --use_fp16, ... are ignored
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank, world, device = init_distributed(args.device, args.threads)
    times, gemm, flops = train(args, rank, world, device)
    finish()  # after train() returned: its DDP model, which holds the process group, is gone
    if rank == 0:
        print(
            "-" * 40
            + f"\ntotal images/sec: {args.batch_size * world * args.num_batches / sum(times):.2f}\n"
            + "-" * 40
            + "\n"
            + utilisation(flops, times, gemm).line(),
            flush=True,
        )


def train(
    args: argparse.Namespace, rank: int, world: int, device: torch.device
) -> tuple[list[float], float, float]:
    """Model, warm-up, the node's GEMM rate, the timed batches: (their seconds, GEMM rate, FLOPs a batch)."""
    torch.manual_seed(1234 + rank)
    model: torch.nn.Module = ResNet(width=args.width)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    flops = training_flops(model, images) * world  # every rank trains its own batch
    model = wrap(model, device, world)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = images.to(device)
    labels = torch.randint(0, 100, (args.batch_size,)).to(device)
    if rank == 0:
        print(
            f"Model:       {args.model}\nBatch size:  {args.batch_size * world} global\n"
            f"             {args.batch_size} per device\nNum devices: {world}\n{layout_line(world, device, args.layout_choice)}",
            flush=True,
        )

    def step() -> torch.Tensor:
        optimiser.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()  # type: ignore[no-untyped-call]  # torch's backward is not annotated
        optimiser.step()
        return loss.detach()

    for _ in range(args.num_warmup_batches):
        step()
    gemm = gemm_rate(device)
    if rank == 0:
        print(
            f"> GEMM rate: {gemm / 1e9:.3f} GFLOP/s (float32, all {world} process(es) at once)\n"
            f"Step\tImg/sec\ttotal_loss",
            flush=True,
        )
    barrier()
    times, last = [], device_time(device)
    for done in range(1, args.num_batches + 1):
        loss = step()
        now = device_time(device)
        elapsed, last = now - last, now
        times.append(elapsed)
        if rank == 0 and done % args.display_every == 0:
            print(
                f"{done}\timages/sec: {args.batch_size * world / elapsed:.1f} +/- 0.0 (jitter = 0.0)\t"
                f"{loss.item():.3f}",
                flush=True,
            )
    return times, gemm, flops


if __name__ == "__main__":
    main()
