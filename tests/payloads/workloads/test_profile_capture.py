"""Execution profiles captured with torch.profiler (caramel.payloads.workloads.profile_capture, docs/microbench.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from caramel.consumers.predict.kernels import KernelCall  # noqa: E402
from caramel.consumers.predict.profile import gpt_profile  # noqa: E402
from caramel.payloads.workloads import profile_capture  # noqa: E402
from caramel.payloads.workloads.profile_capture import (  # noqa: E402
    Kernel,
    Operator,
    capture,
    capture_gpt,
    capture_resnet,
)
from caramel.payloads.workloads.resnet import ResNet, training_flops  # noqa: E402

GPT = {"hidden": 32, "layers": 2, "heads": 4, "seq": 16, "batch": 4, "vocab": 64}


def calls(document: dict) -> list[KernelCall]:
    return [KernelCall(k["kind"], tuple(k["shape"]), k["dtype"], k["count"], k["ranks"]) for k in document["kernels"]]


def work(document_calls: list[KernelCall], kind: str) -> float:
    return sum(c.count * c.work() for c in document_calls if c.kind == kind)


def test_captured_and_analytic_gpt_profiles_agree_on_gemm_flops() -> None:
    captured = calls(capture_gpt(**GPT))
    analytic = gpt_profile(**GPT).kernels
    assert work(captured, "gemm") == pytest.approx(work(analytic, "gemm"), rel=1e-9)
    # the same number of products (forward, and both gradients of each); the same dimensions (their
    # orientation differs: a weight gradient is K x N x M either way); the same fused attention
    assert sum(c.count for c in captured if c.kind == "gemm") == sum(c.count for c in analytic if c.kind == "gemm")
    assert _dims(captured) == _dims(analytic)
    assert all(c.dtype == "float32" for c in captured)
    attention = [(c.kind, c.shape, c.count) for c in captured if c.kind.startswith("attention")]
    assert attention == [(c.kind, c.shape, c.count) for c in analytic if c.kind.startswith("attention")]
    assert attention == [("attention", (4 * 4, 16, 8), 2.0), ("attention_backward", (4 * 4, 16, 8), 2.0)]


def _dims(kernels: list[KernelCall]) -> dict[tuple[int, ...], float]:
    """GEMM counts by sorted dimensions."""
    counts: dict[tuple[int, ...], float] = {}
    for c in kernels:
        if c.kind == "gemm":
            key = tuple(sorted(c.shape))
            counts[key] = counts.get(key, 0.0) + c.count
    return counts


def test_a_data_parallel_bfloat16_capture_has_the_rank_share_the_dtype_and_the_all_reduce() -> None:
    document = capture_gpt(**dict(GPT, batch=8), dp=2, dtype="bfloat16")
    captured = calls(document)
    assert work(captured, "gemm") == pytest.approx(work(gpt_profile(**GPT).kernels, "gemm"))  # 8 sequences / 2 ranks
    assert {c.dtype for c in captured if c.kind == "gemm"} == {"bfloat16"}
    (allreduce,) = [c for c in captured if c.kind == "allreduce"]
    h, layers, vocab, seq = GPT["hidden"], GPT["layers"], GPT["vocab"], GPT["seq"]
    weights = layers * (12 * h * h + 13 * h) + (2 * vocab + seq) * h + 2 * h  # blocks, embeddings, head, last norm
    assert allreduce.ranks == 2 and allreduce.shape == (4 * weights,)
    assert document["launches"] > 0 and document["source"] == "torch.profiler"


def test_the_walk_maps_operators_onto_kernel_kinds() -> None:
    linear = Operator("aten::linear", [[8, 4], [6, 4]], ["float", "float"], [], [
        leaf("aten::t", [[6, 4]]), leaf("aten::addmm", [[6], [8, 4], [4, 6], [], []], ["float"] * 3 + ["Scalar"] * 2)])
    attention = leaf("aten::_scaled_dot_product_flash_attention_for_cpu", [[2, 3, 5, 4], [2, 3, 5, 4], [2, 3, 5, 4]],
                     ["c10::BFloat16"] * 3)
    conv_back = leaf("aten::convolution_backward", [[2, 8, 4, 4], [2, 3, 8, 8], [8, 3, 3, 3]], None,
                     [None, None, None, [0], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False]])
    conv = leaf("aten::convolution", [[2, 3, 8, 8], [8, 3, 3, 3]], None, [None, None, None, [2, 2], [1, 1]])
    roots = [linear, attention, conv, conv_back, leaf("aten::add", [[8, 6], [8, 6]]), leaf("aten::view", [[8, 6]]),
             Operator("Optimizer.step", [], [], [], [leaf("aten::mul_", [[6, 4], []], ["float", "Scalar"])]),
             leaf("python function", [[100]]), leaf("aten::copy_", [[8], [8]]),
             leaf("aten::gelu", [[8]], ["c10::BFloat16"])]
    document = profile_capture.profile_document(roots, iterations=1)
    found = {(k["kind"], tuple(k["shape"]), k["dtype"]): k["count"] for k in document["kernels"]}
    assert found == {("gemm", (8, 6, 4), "float32"): 1,
                     ("attention", (6, 5, 4), "bfloat16"): 1,  # 2 sequences x 3 heads, 5 tokens, width 4
                     ("conv", (2, 5, 4, 3), "float32"): 2,  # forward, and the weight's gradient only
                     ("eltwise", (192,), "float32"): 1, ("eltwise", (96,), "float32"): 1,
                     ("copy", (32,), "float32"): 1, ("eltwise", (16,), "bfloat16"): 1}
    assert document["launches"] == 10  # t, addmm, attention, conv, conv backward, add, view, mul_, copy_, gelu
    assert document["unmapped"] == {"python function": 1} and document["format"] == profile_capture.FORMAT
    backward = Operator("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                        [[2, 3, 5, 4]] * 4, ["float"] * 4, [], [])
    assert profile_capture.kernels_of(backward)[0] == [Kernel("attention_backward", (6, 5, 4))]


def leaf(name: str, shapes: list, dtypes: list | None = None, values: list | None = None) -> Operator:
    return Operator(name, shapes, dtypes or ["float"] * len(shapes), values or [], [])


def test_an_operator_that_does_its_own_pass_is_counted_not_only_its_callees() -> None:
    """Adam's add_/mul_/div over a weight call only a scalar's conversion, a layer norm only allocations,
    an add of float32 and bfloat16 converts one operand first: the pass is the operator's own, and was
    dropped when only callees counted. A clone is its copy, a linear its GEMM: nothing added."""
    scalar = Operator("aten::to", [[]], ["double"], [], [Operator("aten::_to_copy", [[]], ["double"], [], [
        leaf("aten::empty_strided", [[]]), leaf("aten::copy_", [[], []])])])
    adam = Operator("aten::mul_", [[512, 96], []], ["float", "double"], [], [scalar])
    norm = Operator("aten::native_layer_norm", [[8, 64, 96], [], [96], [96]], ["float"] * 4, [], [
        leaf("aten::empty", [[]]), leaf("aten::view", [[8, 64, 96]])])
    converted = Operator("aten::to", [[8, 6]], ["c10::BFloat16"], [], [Operator(
        "aten::_to_copy", [[8, 6]], ["c10::BFloat16"], [], [leaf("aten::copy_", [[8, 6], [8, 6]], ["float", "c10::BFloat16"])])])
    mixed = Operator("aten::add", [[8, 6], [8, 6]], ["float", "c10::BFloat16"], [], [converted])
    clone = Operator("aten::clone", [[8, 6]], ["float"], [], [leaf("aten::empty_like", [[8, 6]]),
                                                              leaf("aten::copy_", [[8, 6], [8, 6]])])
    linear = Operator("aten::linear", [[8, 4], [6, 4]], ["float", "float"], [], [
        leaf("aten::addmm", [[6], [8, 4], [4, 6], [], []], ["float"] * 3 + ["Scalar"] * 2)])
    kernels = {root.name: profile_capture.kernels_of(root) for root in (adam, norm, mixed, clone, linear)}
    assert kernels["aten::mul_"] == ([Kernel("eltwise", (4 * 512 * 96,))], 3)  # the scalar conversion: 2 launches
    assert kernels["aten::native_layer_norm"] == ([Kernel("eltwise", (4 * 8 * 64 * 96,))], 3)
    assert kernels["aten::add"] == ([Kernel("copy", (192,)), Kernel("eltwise", (192,))], 2)
    assert kernels["aten::clone"] == ([Kernel("copy", (192,))], 2)
    assert kernels["aten::linear"] == ([Kernel("gemm", (8, 6, 4))], 1)


def test_a_leaf_no_kernel_times_is_listed_as_unmapped_not_dropped() -> None:
    roots = [leaf("my_extension::fused_thing", [[1024]]), leaf("my_extension::fused_thing", [[64]]),
             leaf("AddBackward0", [[8]]), leaf("detach", [[8]]), leaf("Optimizer.zero_grad", [])]
    document = profile_capture.profile_document(roots, iterations=2)
    assert document["unmapped"] == {"my_extension::fused_thing": 1.0}  # per iteration; autograd nodes move nothing


@pytest.mark.slow
def test_any_pytorch_callable_is_captured_per_iteration() -> None:
    a, b = torch.randn(16, 8), torch.randn(8, 4)
    document = capture(lambda: torch.mm(a, b).relu(), iterations=2)
    assert [(k["kind"], k["shape"], k["count"]) for k in document["kernels"]] == [
        ("eltwise", [256], 1.0), ("gemm", [16, 4, 8], 1.0)]
    assert document["iterations"] == 2 and document["launches"] == 2


@pytest.mark.slow
def test_a_resnet_capture_counts_its_convolutions_work() -> None:
    found = calls(capture_resnet(batch=2, image=8, width=4))
    model = ResNet((1, 1, 1, 1), 4, 100)
    convolutions = sum(1 for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    assert sum(c.count for c in found if c.kind == "conv") == 3 * convolutions - 1  # the stem has no input gradient
    total = work(found, "conv") + work(found, "gemm")
    assert total == pytest.approx(training_flops(model, torch.randn(2, 3, 8, 8)), rel=0.25)  # channels rounded


def test_the_command_line_writes_a_profile_file(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    profile_capture.main(["gpt", *(f"{k}={v}" for k, v in GPT.items()), "--out", str(out)])
    document = json.loads(out.read_text())
    assert work(calls(document), "gemm") == pytest.approx(work(gpt_profile(**GPT).kernels, "gemm"))


def tiny_step():
    """A factory for `profile_capture step MODULE:FUNCTION`: returns the step to profile."""
    a, b = torch.randn(4, 6), torch.randn(6, 2)
    return lambda: torch.mm(a, b)


def test_the_command_line_captures_any_step_a_factory_returns(tmp_path: Path) -> None:
    out = tmp_path / "step.json"
    profile_capture.main(["step", f"{__name__}:tiny_step", "--iterations", "2", "--out", str(out)])
    assert [(k["kind"], k["shape"], k["count"]) for k in json.loads(out.read_text())["kernels"]] == [
        ("gemm", [4, 2, 6], 1.0)]
