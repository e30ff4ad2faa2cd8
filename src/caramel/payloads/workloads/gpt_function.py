"""caramel's GPT trainer as a function: a `call:` benchmark's target (benchmarks/gpt_function.yaml).

    call: caramel.payloads.workloads.gpt_function:train

The same model, data and timing as `python -m caramel.payloads.workloads.gpt` (one process here: submitit
runs one task per workpackage), returning its figures instead of printing Megatron's lines for a
patternset: tokens/s and seconds per iteration over the counted iterations, the last loss, the
GEMM rate the process measured and the model FLOP utilisation against it. torch is imported when
the function runs, so reading the benchmark file (which imports this module) stays quick.
"""

from __future__ import annotations


def train(
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    seq_length: int = 64,
    global_batch_size: int = 8,
    train_iters: int = 10,
    warmup_iters: int = 2,
    threads: int = 0,
    device: str = "cpu",
    seed: int = 1234,
) -> dict[str, float]:
    """Train for `train_iters` counted iterations (after `warmup_iters`); the run's figures."""
    from caramel.payloads.workloads import gpt
    from caramel.payloads.workloads.common import finish, init_distributed, utilisation

    args = gpt.parse_args(
        [
            "--hidden-size",
            str(hidden_size),
            "--num-layers",
            str(num_layers),
            "--num-attention-heads",
            str(num_heads),
            "--seq-length",
            str(seq_length),
            "--micro-batch-size",
            str(global_batch_size),
            "--global-batch-size",
            str(global_batch_size),
            "--train-iters",
            str(train_iters),
            "--warmup-iters",
            str(warmup_iters),
            "--threads",
            str(threads),
            "--device",
            device,
            "--seed",
            str(seed),
        ]
    )
    rank, world, where = init_distributed(args.device, args.threads)
    times, gemm = gpt.train(args, rank, world, where)
    finish()
    counted = sum(times)
    used = utilisation(gpt.flops_per_iteration(args), times, gemm)
    return {
        "tokens_per_s": train_iters * global_batch_size * seq_length / counted
        if counted > 0
        else 0.0,
        "iteration_s": counted / len(times) if times else 0.0,
        "gemm_gflops": gemm / 1e9,
        "mfu": used.percent,
    }


# The figures train returns, with their units (a benchmark's `figure:` entries may say otherwise).
FIGURE_UNITS = {"tokens_per_s": "tokens/s", "iteration_s": "s", "gemm_gflops": "GFLOP/s", "mfu": "%"}
train.caramel_figures = FIGURE_UNITS  # type: ignore[attr-defined]
