"""The microbenchmark cases run in-process (caramel.workloads.microbench, docs/microbench.md)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")

from caramel.predict.kernels import KernelCall, parse_case  # noqa: E402
from caramel.workloads import microbench  # noqa: E402


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_an_element_wise_case_times_a_pass_in_its_dtype(dtype: str, capsys) -> None:
    microbench.main([f"eltwise:65536:{dtype}", "--seconds", "0.01", "--threads", "1"])
    line = capsys.readouterr().out
    found = re.search(r"> microbench eltwise:65536:\w+ \(1 threads\): seconds (\S+) rate (\S+) GB/s", line)
    assert found and float(found[1]) > 0 and float(found[2]) > 0
    assert parse_case(f"eltwise:65536:{dtype}") == KernelCall("eltwise", (65536,), dtype)
