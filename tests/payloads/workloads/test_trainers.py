"""The trainers in-process (one rank): Megatron and tf_cnn_benchmarks lines, warm-up not counted."""

import re

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from caramel.payloads.workloads import gpt, resnet  # noqa: E402
from caramel.payloads.workloads.data import write_corpus  # noqa: E402

ITERATION = re.compile(r"iteration\s+(\d+)/\s*(\d+) \| consumed samples:\s+(\d+) \| elapsed time per iteration \(s\):"
                       r" ([\d.]+) \|.* TFLOPs: ([\d.]+) \|")


@pytest.mark.slow
def test_gpt_prints_one_megatron_line_per_counted_iteration(tmp_path, capsys) -> None:
    write_corpus(tmp_path / "c", documents=20, mean_length=100)
    gpt.main(["--num-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2", "--seq-length", "16",
              "--micro-batch-size", "2", "--global-batch-size", "4", "--train-iters", "3", "--warmup-iters", "2",
              "--data-path", str(tmp_path / "c"), "--fp16", "--use-flash-attn"])
    out = capsys.readouterr().out
    lines = ITERATION.findall(out)
    assert [(int(i), int(n), int(s)) for i, n, s, _, _ in lines] == [(1, 3, 4), (2, 3, 8), (3, 3, 12)]
    assert all(float(t) > 0 and float(f) > 0 for *_, t, f in lines)
    assert out.count("warm-up") == 2 and "iteration" not in "".join(line for line in out.splitlines() if "warm-up" in line)


def test_gpt_refuses_model_parallelism(capsys) -> None:
    with pytest.raises(SystemExit, match="data parallel only"):
        gpt.main(["--tensor-model-parallel-size", "2"])


def test_resnet_prints_tf_cnn_total(capsys) -> None:
    resnet.main(["--batch_size", "2", "--num_batches", "2", "--num_warmup_batches", "1", "--image_size", "16",
                 "--width", "4", "--variable_update", "horovod"])
    out = capsys.readouterr().out
    assert re.search(r"^total images/sec: [\d.]+$", out, re.MULTILINE)
    assert len(re.findall(r"^\d+\timages/sec:", out, re.MULTILINE)) == 2


MFU = re.compile(r"^> MFU: ([\d.]+) % \(model ([\d.]+) GFLOP/s of the measured GEMM rate ([\d.]+) GFLOP/s\)$", re.MULTILINE)


def test_mfu_is_the_model_flop_rate_over_the_measured_gemm_rate() -> None:
    from caramel.payloads.workloads.common import utilisation

    measured = utilisation(4.5e8, [0.1, 0.2, 0.3], 1.0e10)
    assert measured.model_flops_per_s == pytest.approx(4.5e8 * 3 / 0.6)
    assert measured.percent == pytest.approx(22.5)
    assert measured.line() == "> MFU: 22.50 % (model 2.250 GFLOP/s of the measured GEMM rate 10.000 GFLOP/s)"
    assert utilisation(1.0, [0.1], 0.0).percent == 0.0


@pytest.mark.slow
def test_gpt_logs_its_layout_parameters_gemm_rate_and_mfu(capsys) -> None:
    args = ["--num-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2", "--seq-length", "16",
            "--micro-batch-size", "2", "--global-batch-size", "4", "--train-iters", "3", "--warmup-iters", "1",
            "--threads", "1"]
    gpt.main([*args, "--layout-choice", "1x1 (measured 2026-11-25: 2x1 19.5k vs 1x2 17.2k tokens/s)"])
    out = capsys.readouterr().out
    model = gpt.GPT(512, 16, 32, 1, 2, 128)
    assert f"> GPT: {sum(p.numel() for p in model.parameters())} parameters, data parallel 1" in out
    assert ("> layout: 1 process(es) x 1 thread(s), chosen: 1x1 (measured 2026-11-25: 2x1 19.5k vs 1x2 17.2k "
            "tokens/s)\n") in out  # what chose it, as the benchmark file planned it (docs/benchmarks.md, "Layout")
    gemm = float(re.search(r"^> GEMM rate: ([\d.]+) GFLOP/s", out, re.MULTILINE).group(1))
    percent, model_rate, rate = map(float, MFU.search(out).groups())
    seconds = [float(t) for *_, t, _ in ITERATION.findall(out)]
    flops = gpt.flops_per_iteration(gpt.parse_args(args))
    assert rate == gemm > 0
    assert model_rate == pytest.approx(flops * 3 / sum(seconds) / 1e9, rel=0.05)  # printed times are rounded
    assert percent == pytest.approx(100 * model_rate / rate, rel=0.01, abs=0.006)
    timed = re.search(r"^> timed: 3 iterations in ([\d.]+) s, CPU ([\d.]+) s of this process \((\d+) % of its 1 "
                      r"thread\(s\)\)$", out, re.MULTILINE)
    assert timed and float(timed.group(1)) == pytest.approx(sum(seconds), abs=0.002) and float(timed.group(2)) > 0


def test_the_timed_line_says_what_share_of_its_threads_the_process_had() -> None:
    # a process that got half of its two threads' time while timed (other work held the cores)
    assert gpt.timed_line([1.0, 1.0], cpu_s=2.0, threads=2) == \
        "> timed: 2 iterations in 2.000 s, CPU 2.000 s of this process (50 % of its 2 thread(s))"
    assert gpt.timed_line([], cpu_s=0.0, threads=1).endswith("(0 % of its 1 thread(s))")


def test_resnet_counts_its_training_flops_and_logs_mfu(capsys) -> None:
    import torch

    one = resnet.training_flops(resnet.ResNet(width=4), torch.randn(1, 3, 16, 16))
    assert resnet.training_flops(resnet.ResNet(width=4), torch.randn(2, 3, 16, 16)) == pytest.approx(2 * one)
    # the stem alone: 3x3 convolution 3 -> 4 channels on 16x16, 2 FLOPs a multiply-add, forward + backward x3
    stem = resnet.ResNet(width=4).stem
    assert resnet.training_flops(stem, torch.randn(1, 3, 16, 16)) == 3 * 2 * (4 * 16 * 16) * 3 * 9
    resnet.main(["--batch_size", "2", "--num_batches", "2", "--num_warmup_batches", "1", "--image_size", "16",
                 "--width", "4", "--threads", "1"])
    out = capsys.readouterr().out
    assert "> layout: 1 process(es) x 1 thread(s)" in out and MFU.search(out)


def test_micro_batches_exchange_gradients_once_per_iteration(tmp_path) -> None:
    """DDP (one rank, gloo) with 4 micro-batches: the gradient all-reduce runs on the last one only."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        args = gpt.parse_args(["--num-layers", "1", "--hidden-size", "16", "--num-attention-heads", "2",
                               "--seq-length", "8", "--micro-batch-size", "1", "--global-batch-size", "4"])
        model = torch.nn.parallel.DistributedDataParallel(gpt.GPT(512, 8, 16, 1, 2, 64))
        exchanged = []

        def count(state, bucket):
            exchanged.append(bucket.index())
            future = torch.futures.Future()
            future.set_result(bucket.buffer())
            return future

        model.register_comm_hook(None, count)
        optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
        gpt.train_step(model, optimiser, gpt.batches(args, 0, 1), torch.device("cpu"), accumulation=1)
        buckets = len(exchanged)  # one all-reduce per gradient bucket
        gpt.train_step(model, optimiser, gpt.batches(args, 0, 1), torch.device("cpu"), accumulation=4)
        assert buckets >= 1 and len(exchanged) == 2 * buckets  # not 4 x buckets for 4 micro-batches
    finally:
        dist.destroy_process_group()


def test_threads_come_from_the_layout_unless_given(monkeypatch) -> None:
    from caramel.payloads.workloads import common, layout

    monkeypatch.setattr(layout, "node_layout", lambda: layout.Layout(1, 3))
    assert common.thread_count(2, under_torchrun=False) == 2
    assert common.thread_count(0, under_torchrun=False) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert common.thread_count(0, under_torchrun=True) == 4
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert common.thread_count(0, under_torchrun=True) == 1


def test_gpt_makes_its_positions_on_the_tokens_device(monkeypatch) -> None:
    """On a GPU the position indices must live where the tokens do (an H100 run failed with
    'index is on cpu'): the CPU cannot show a device mismatch, so the call's device is checked."""


    asked = []
    real_arange = torch.arange

    def arange(*args, **kwargs):
        asked.append(kwargs.get("device"))
        return real_arange(*args, **kwargs)

    monkeypatch.setattr(gpt.torch, "arange", arange)
    tokens = torch.zeros(2, 8, dtype=torch.long)
    gpt.GPT(32, 8, 16, 1, 2, 32)(tokens)
    assert asked == [tokens.device]


def test_megatron_precision_flags_choose_the_gpu_compute_dtype() -> None:
    from caramel.payloads.workloads import common

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert common.compute_dtype(cuda, fp16=True, bf16=False) == torch.float16
    assert common.compute_dtype(cuda, fp16=False, bf16=True) == torch.bfloat16
    assert common.compute_dtype(cuda, fp16=False, bf16=False) == torch.float32
    assert common.compute_dtype(cpu, fp16=True, bf16=False) == torch.float32  # flags ignored on the CPU
    args = gpt.parse_args(["--fp16", "--use-flash-attn"])  # other Megatron flags still accepted
    assert args.fp16 and not args.bf16


def test_micro_batches_are_windows_of_the_corpus_across_blocks(tmp_path) -> None:
    import numpy as np

    from caramel.payloads.workloads.data import read_tokens

    write_corpus(tmp_path / "c", documents=20, mean_length=100)
    args = gpt.parse_args(["--seq-length", "16", "--data-path", str(tmp_path / "c")])
    text = (read_tokens(tmp_path / "c").astype(np.int64) % args.vocab_size).tolist()
    windows = {tuple(text[s:s + 17]) for s in range(len(text) - 17)}
    data = gpt.batches(args, 0, micro=2, block=4)  # 4 micro-batches a block: 10 cross three blocks
    seen = []
    for _ in range(10):
        inputs, targets = next(data)
        assert inputs.shape == targets.shape == (2, 16)
        for row_in, row_out in zip(inputs.tolist(), targets.tolist(), strict=True):
            assert tuple(row_in + row_out[-1:]) in windows  # targets are the inputs shifted by one token
            seen.append(tuple(row_in))
    assert len(set(seen)) > 10  # fresh draws in every block, not the first block repeated
