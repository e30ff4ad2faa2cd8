"""The trainers in-process (one rank): Megatron and tf_cnn_benchmarks lines, warm-up not counted."""

import re

import pytest

pytest.importorskip("torch")

from caramel.workloads import gpt, resnet  # noqa: E402
from caramel.workloads.data import write_corpus  # noqa: E402

ITERATION = re.compile(r"iteration\s+(\d+)/\s*(\d+) \| consumed samples:\s+(\d+) \| elapsed time per iteration \(s\):"
                       r" ([\d.]+) \|.* TFLOPs: ([\d.]+) \|")


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
