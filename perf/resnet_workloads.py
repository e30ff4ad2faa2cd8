#!/usr/bin/env python3
"""Does the shipped `resnet50` job on `local` measure the machine or caramel? Interleaved rounds of
separate processes: caramel's ResNet trainer (`python -m caramel.payloads.workloads.resnet`, the
local shape: global batch 8, 100 counted batches after 5 warm-up) on the layout caramel chooses for
it (caramel.payloads.workloads.layout.layout_choice("resnet"): $CARAMEL_CPU_LAYOUT, a stored
`bench layout --measure --workload resnet`, else the rule), against a minimal plain-PyTorch loop of
the same model class and batch (perf/plain_resnet.py) on every candidate layout: 1x1, one process
with every core (1xN), one gloo DDP rank per core (Nx1), and caramel's. Issue 21's target: the
trainer within 5 % of the best plain loop (images/s).

    python perf/resnet_workloads.py [--rounds 9] [--batches 200]      # about 6.5 minutes on a quiet
    2-core node

Each round runs every variant once, starting at a different one (rotation), with the load average
beside it. Prints per variant the median and spread of images/s, the trainer against the plain loop
of its own layout and against the best plain layout (ratio of the medians and median of the rounds'
paired ratios). Not a test: it prints figures (docs/benchmarks.md quotes them).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from caramel.payloads.workloads.layout import Layout, layout_choice, usable_cpus

ROOT = Path(__file__).resolve().parents[1]
GLOBAL_BATCH = 8  # resnet50.xml's global_batch_size on a CPU
FIGURE = re.compile(r"(?:total images/sec|plain images/s):\s*([0-9.]+)")


def command(layout: Layout, trainer: bool, batches: int) -> list[str]:
    start = (
        [sys.executable]
        if layout.processes == 1
        else [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(layout.processes),
        ]
    )
    batch = str(max(1, GLOBAL_BATCH // layout.processes))
    if trainer:
        return [
            *start,
            "-m",
            "caramel.payloads.workloads.resnet",
            "--batch_size",
            batch,
            "--num_batches",
            str(batches),
            "--num_warmup_batches",
            "5",
            "--threads",
            str(layout.threads),
            "--display_every",
            str(batches),
        ]
    return [
        *start,
        str(ROOT / "perf" / "plain_resnet.py"),
        "--batch",
        batch,
        "--batches",
        str(batches),
        "--warmup",
        "5",
        "--threads",
        str(layout.threads),
    ]


def images_per_second(argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    found = FIGURE.findall(done.stdout)
    if done.returncode != 0 or not found:
        sys.exit(
            f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-1500:]}\n"
            f"{done.stderr[-1500:]}"
        )
    return float(found[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--batches", type=int, default=200)
    args = p.parse_args()
    cores = len(usable_cpus())
    choice = layout_choice("resnet")
    candidates = {
        f"{c.processes}x{c.threads}": c
        for c in (Layout(1, 1), Layout(1, cores), Layout(cores, 1), choice.layout)
    }
    variants = {"trainer": (choice.layout, True)} | {
        f"plain-{name}": (c, False) for name, c in candidates.items()
    }
    print(
        f"trainer layout {choice.describe()}; {cores} usable cores; global batch {GLOBAL_BATCH}, "
        f"{args.batches} counted batches; load {os.getloadavg()[0]:.2f} at start"
    )
    figures: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for round_no in range(args.rounds):
        order = names[round_no % len(names) :] + names[: round_no % len(names)]
        line = []
        for name in order:
            layout, trainer = variants[name]
            figures[name].append(images_per_second(command(layout, trainer, args.batches)))
            line.append(f"{name} {figures[name][-1]:.0f}")
        print(
            f"round {round_no + 1} (load {os.getloadavg()[0]:.2f}): "
            + ", ".join(line)
            + " images/s",
            flush=True,
        )
    print(f"\n{'variant':12} images/s: median (min..max)")
    for name, values in figures.items():
        print(f"{name:12} {statistics.median(values):9.1f} ({min(values):.1f}..{max(values):.1f})")
    own = f"plain-{choice.layout.processes}x{choice.layout.threads}"
    best = max(
        (n for n in figures if n.startswith("plain-")), key=lambda n: statistics.median(figures[n])
    )
    for label, other in (("its own layout", own), ("the best plain layout", best)):
        ratio = statistics.median(figures["trainer"]) / statistics.median(figures[other])
        paired = statistics.median(
            t / o for t, o in zip(figures["trainer"], figures[other], strict=True)
        )
        print(
            f"trainer / {other} ({label}; target >= 0.95): ratio of the medians {ratio:.3f}, "
            f"median of the rounds' paired ratios {paired:.3f}"
        )


if __name__ == "__main__":
    main()
