#!/usr/bin/env python3
"""A minimal plain-PyTorch training loop of caramel's GPT shape: the reference perf/workloads.py
holds caramel's trainer against. No logging, no per-iteration timing, synthetic tokens made up
front.

    python perf/plain_gpt.py --threads 2 --iters 200                    # one process
    torchrun --standalone --nproc_per_node 2 perf/plain_gpt.py --threads 1   # DDP over gloo,
    no_sync

It uses caramel's model class (caramel.payloads.workloads.gpt.GPT), so a difference is the loop's,
not the model's. Prints `plain tokens/s: N` (all ranks), the wall seconds of the timed loop and rank
0's CPU seconds over it (`plain cpu seconds:`, as the trainer's `> timed:` line gives its own).

    python perf/plain_gpt.py --ab 15 --threads 1

instead alternates, in one process, blocks of 20 iterations of caramel's own timed loop
(`gpt.timed_iterations`, its log lines captured) and of this loop, each on its own copy of the
model, and prints the medians of CPU and wall time per iteration and their ratio: the loops compared
without the noise of separate processes on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
from torch import nn

from caramel.payloads.workloads.gpt import GPT


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [
        ("layers", 2),
        ("hidden", 64),
        ("heads", 4),
        ("seq", 64),
        ("micro", 2),
        ("global-batch", 8),
        ("vocab", 512),
        ("iters", 200),
        ("warmup", 5),
        ("threads", 1),
    ]:
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument(
        "--ab", type=int, default=0, help="rounds of the in-process comparison with caramel's loop"
    )
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.ab:
        compare_loops(args)
        return
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
            quiet = (
                model.no_sync() if world > 1 and i < accumulation - 1 else contextlib.nullcontext()
            )
            with quiet:
                logits = model(tokens[i, :, :-1])
                loss = (
                    nn.functional.cross_entropy(logits.flatten(0, 1), tokens[i, :, 1:].flatten())
                    / accumulation
                )
                loss.backward()
        optimiser.step()

    for _ in range(args.warmup):
        step()
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(args.iters):
        step()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if world == 1 or dist.get_rank() == 0:
        print(
            f"plain tokens/s: {args.iters * args.global_batch * args.seq / seconds:.1f}\n"
            f"plain seconds: {seconds:.3f}"
            f"\nplain cpu seconds: {cpu:.3f}",
            flush=True,
        )
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def compare_loops(args: argparse.Namespace, block: int = 20) -> None:
    import io
    import statistics
    from contextlib import redirect_stdout
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from caramel.payloads.workloads import gpt
    from caramel.payloads.workloads.data import write_corpus

    with TemporaryDirectory() as tmp:
        write_corpus(Path(tmp) / "c")
        shape = gpt.parse_args(
            [
                "--num-layers",
                str(args.layers),
                "--hidden-size",
                str(args.hidden),
                "--num-attention-heads",
                str(args.heads),
                "--seq-length",
                str(args.seq),
                "--micro-batch-size",
                str(args.micro),
                "--global-batch-size",
                str(args.global_batch),
                "--train-iters",
                str(block),
                "--data-path",
                str(Path(tmp) / "c"),
            ]
        )
        accumulation = args.global_batch // args.micro
        models = [
            GPT(args.vocab, args.seq, args.hidden, args.layers, args.heads, 4 * args.hidden)
            for _ in range(2)
        ]
        optimisers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in models]
        data = gpt.batches(shape, 0, args.micro)
        tokens = torch.randint(0, args.vocab, (accumulation, args.micro, args.seq + 1))

        def caramel_block() -> None:
            with redirect_stdout(io.StringIO()):
                gpt.timed_iterations(
                    shape, models[0], optimisers[0], data, torch.device("cpu"), accumulation, 0, 1
                )

        def plain_block() -> None:
            for _ in range(block):
                optimisers[1].zero_grad(set_to_none=True)
                for i in range(accumulation):
                    logits = models[1](tokens[i, :, :-1])
                    loss = (
                        nn.functional.cross_entropy(
                            logits.flatten(0, 1), tokens[i, :, 1:].flatten()
                        )
                        / accumulation
                    )
                    loss.backward()
                optimisers[1].step()

        times: dict[str, list[tuple[float, float]]] = {"caramel": [], "plain": []}
        caramel_block(), plain_block()  # warm-up
        for r in range(args.ab):
            for name, run in sorted(
                [("caramel", caramel_block), ("plain", plain_block)], reverse=r % 2 == 1
            ):
                cpu, wall = time.process_time(), time.perf_counter()
                run()
                times[name].append(
                    ((time.process_time() - cpu) / block, (time.perf_counter() - wall) / block)
                )
    med = {
        name: [statistics.median(t[k] for t in rows) for k in (0, 1)]
        for name, rows in times.items()
    }
    for name, (cpu, wall) in med.items():
        print(f"{name:8} ms/iteration: cpu {1000 * cpu:.3f}  wall {1000 * wall:.3f}")
    print(
        f"caramel / plain throughput: cpu {med['plain'][0] / med['caramel'][0]:.3f}  "
        f"wall {med['plain'][1] / med['caramel'][1]:.3f}"
    )


if __name__ == "__main__":
    main()
