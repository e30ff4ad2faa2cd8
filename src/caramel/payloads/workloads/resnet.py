"""A ResNet in plain PyTorch that takes tf_cnn_benchmarks' arguments and prints its log lines.

    torchrun --nproc_per_node 2 -m caramel.payloads.workloads.resnet --batch_size 4 --num_batches 10

Synthetic images and labels (as CARAML's `synthetic` runs), one process with `--threads` threads or
data parallel over torchrun ranks (DDP, gloo). `--batch_size` is per device, as in
tf_cnn_benchmarks. Warm-up batches (--num_warmup_batches) are excluded; the figure is `total
images/sec` over the counted batches, all devices, then `> MFU:` against the measured `> GEMM
rate:`.
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
from caramel.payloads.workloads.mlperf_log import TrainingLog, submission, time_to_train_line
from caramel.payloads.workloads.mlperf_log import add_arguments as add_mlperf_arguments

# MLPerf ResNet's quality target (top-1 accuracy; the closed rules' eval_accuracy >= 0.759)
MLPERF_TARGET_ACCURACY = 0.759
SYNTHETIC_CLASSES = 10  # of the learnable synthetic set a run to a target trains on
LABEL_NOISE = 0.1  # share of its labels drawn at random, as real labels err: no model scores 1.0


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
    (2 x multiply-adds) counted with hooks, times 3 (the backward pass costs about twice the
    forward)."""
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
    p.add_argument(
        "--target-accuracy",
        type=float,
        default=0.0,
        help=f"train to this eval accuracy (MLPerf: {MLPERF_TARGET_ACCURACY}); 0: time batches",
    )
    p.add_argument("--max-epochs", type=int, default=20, help="a run to a target gives up after")
    p.add_argument("--train-samples", type=int, default=1024, help="synthetic training images")
    p.add_argument("--eval-samples", type=int, default=256, help="synthetic evaluation images")
    add_mlperf_arguments(p, "resnet")
    add_layout_choice(p)
    args, _tf_only = p.parse_known_args(argv)  # --variable_update, --use_fp16, ... are ignored
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank, world, device = init_distributed(args.device, args.threads)
    if args.target_accuracy > 0:
        train_to_target(args, rank, world, device)
        finish()
        return
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
    """Model, warm-up, the node's GEMM rate, the timed batches: (their seconds, GEMM rate, FLOPs a
    batch)."""
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
            f"             {args.batch_size} per device\nNum devices: {world}\n"
            f"{layout_line(world, device, args.layout_choice)}",
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
                f"{done}\timages/sec: {args.batch_size * world / elapsed:.1f} +/- 0.0 (jitter = "
                f"0.0)\t{loss.item():.3f}",
                flush=True,
            )
    return times, gemm, flops


def synthetic_set(
    samples: int, image_size: int, seed: int, prototypes: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A learnable image set: each class a fixed random pattern under Gaussian noise, with
    LABEL_NOISE of its labels drawn at random."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, SYNTHETIC_CLASSES, (samples,), generator=generator)
    noise = torch.randn(samples, 3, image_size, image_size, generator=generator)
    images = prototypes[labels] + noise
    flipped = torch.rand(samples, generator=generator) < LABEL_NOISE
    random_labels = torch.randint(0, SYNTHETIC_CLASSES, (samples,), generator=generator)
    return images, torch.where(flipped, random_labels, labels)


def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch: int) -> float:
    """Top-1 accuracy over the whole evaluation set (every rank evaluates all of it)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for first in range(0, len(labels), batch):
            logits = model(images[first : first + batch])
            correct += int((logits.argmax(dim=1) == labels[first : first + batch]).sum())
    model.train()
    return correct / len(labels)


def train_to_target(args: argparse.Namespace, rank: int, world: int, device: torch.device) -> None:
    """MLPerf's run: epochs over the synthetic set, an evaluation after each, until the accuracy
    reaches --target-accuracy (or --max-epochs); prints throughput and time to train."""
    log = TrainingLog(args.mllog_file, rank, submission(args))
    torch.manual_seed(1234)
    prototypes = torch.randn(
        SYNTHETIC_CLASSES,
        3,
        args.image_size,
        args.image_size,
        generator=torch.Generator().manual_seed(7),
    )
    images, labels = synthetic_set(args.train_samples, args.image_size, 1 + rank, prototypes)
    eval_images, eval_labels = synthetic_set(args.eval_samples, args.image_size, 99, prototypes)
    model = wrap(ResNet(width=args.width), device, world)
    learning_rate = 0.05
    optimiser = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    log.hyperparameters(
        {
            "seed": 1234,
            "global_batch_size": args.batch_size * world,
            "train_samples": args.train_samples * world,
            "eval_samples": args.eval_samples,
            "opt_name": "sgd",
            "opt_base_learning_rate": learning_rate,
            "gradient_accumulation_steps": 1,
        }
    )
    images, labels = images.to(device), labels.to(device)
    eval_images, eval_labels = eval_images.to(device), eval_labels.to(device)
    barrier()
    log.start_run()
    quality, trained, epoch = 0.0, 0, 0
    while quality < args.target_accuracy and epoch < args.max_epochs:
        epoch += 1
        log.start("block_start", {"first_epoch_num": epoch, "epoch_count": 1})
        log.start("epoch_start", {"epoch_num": epoch})
        trained += train_epoch(model, optimiser, images, labels, args.batch_size)
        log.end("epoch_stop", {"epoch_num": epoch})
        quality = accuracy(model, eval_images, eval_labels, args.batch_size)
        log.evaluation(quality, {"epoch_num": epoch})
        log.end("block_stop", {"first_epoch_num": epoch, "epoch_count": 1})
        if rank == 0:
            print(f"epoch {epoch}\teval accuracy: {quality:.4f}", flush=True)
    reached = quality >= args.target_accuracy
    seconds = log.stop_run(reached)
    if rank == 0:
        print(
            f"total images/sec: {trained * world / seconds:.2f}\n"
            + time_to_train_line(
                seconds, reached, quality, f"eval accuracy {args.target_accuracy}"
            ),
            flush=True,
        )


def train_epoch(
    model: nn.Module,
    optimiser: torch.optim.Optimizer,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch: int,
) -> int:
    """One pass over this rank's images in a fresh order; returns the images trained on."""
    order = torch.randperm(len(labels), device=labels.device)
    for first in range(0, len(labels) - batch + 1, batch):
        chosen = order[first : first + batch]
        optimiser.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images[chosen]), labels[chosen])
        loss.backward()  # type: ignore[no-untyped-call]  # torch's backward is not annotated
        optimiser.step()
    return len(labels) // batch * batch


if __name__ == "__main__":
    main()
