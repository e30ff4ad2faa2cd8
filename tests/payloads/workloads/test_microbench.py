"""The microbenchmark cases run in-process (caramel.payloads.workloads.microbench, docs/microbench.md), and the
kernel texts (`gemm:SHAPE[:DTYPE]`, ...): fields too many or too few are an error naming the kernel's
fields (a third gemm field was passed as the device before)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")

from caramel.consumers.predict.kernels import KernelCall, parse_case  # noqa: E402
from caramel.payloads.workloads import microbench  # noqa: E402
from caramel.payloads.workloads.microbench import case  # noqa: E402


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_an_element_wise_case_times_a_pass_in_its_dtype(dtype: str, capsys) -> None:
    microbench.main([f"eltwise:65536:{dtype}", "--seconds", "0.01", "--threads", "1"])
    line = capsys.readouterr().out
    found = re.search(r"> microbench eltwise:65536:\w+ \(1 threads\): seconds (\S+) rate (\S+) GB/s", line)
    assert found and float(found[1]) > 0 and float(found[2]) > 0
    assert parse_case(f"eltwise:65536:{dtype}") == KernelCall("eltwise", (65536,), dtype)


@pytest.mark.parametrize(("text", "shown"), [
    ("gemm:8x8x8:float32:cuda", "gemm:SHAPE:[DTYPE]"),
    ("gemm", "gemm:SHAPE:[DTYPE]"),
    ("copy:1024:x", "copy:BYTES"),
    ("conv:1x3x8:3:4", "conv:SHAPE:[KERNEL]"),
    ("allreduce", "allreduce:BYTES"),
])
def test_a_kernel_with_the_wrong_fields_names_them(text: str, shown: str) -> None:
    with pytest.raises(SystemExit, match=re.escape(f"'{text}' is not {shown}")):
        case(text, "cpu")


def test_a_kernel_takes_its_defaults() -> None:
    run, work, unit = case("gemm:8x8x8", "cpu")
    run()
    assert work > 0 and unit
    _run, moved, unit = case("copy:4096", "cpu")
    assert moved > 0 and unit == "GB/s"


@pytest.mark.parametrize("kind", ["attention", "attention_backward"])
def test_an_attention_case_times_the_fused_attention(kind: str, capsys) -> None:
    microbench.main([f"{kind}:4x16x8:bfloat16", "--seconds", "0.01", "--threads", "1"])
    found = re.search(rf"> microbench {kind}:4x16x8:bfloat16 \(1 threads\): seconds (\S+) rate (\S+) GFLOP/s",
                      capsys.readouterr().out)
    assert found and float(found[1]) > 0
    assert parse_case(f"{kind}:4x16x8:bfloat16") == KernelCall(kind, (4, 16, 8), "bfloat16")
    with pytest.raises(SystemExit, match=re.escape(f"'{kind}:4x16x8:bfloat16:x' is not {kind}:SHAPE:[DTYPE]")):
        case(f"{kind}:4x16x8:bfloat16:x", "cpu")
