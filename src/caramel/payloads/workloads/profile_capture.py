"""A workload's execution profile captured with torch.profiler: the kernels of one training
iteration, with their shapes and counts, mapped onto the kernel kinds the microbenchmarks time
(docs/microbench.md; `bench predict --method kernels` sums the system's kernel models over it).

    python -m caramel.payloads.workloads.profile_capture gpt hidden=64 layers=2 heads=4 seq=64
    batch=8 vocab=512 \
        [ffn=F dp=D dtype=bfloat16] --out profile.json
    python -m caramel.payloads.workloads.profile_capture resnet batch=8 image=32 width=16 [blocks=1
    classes=100] python -m caramel.payloads.workloads.profile_capture step package.module:factory
    --out profile.json

`capture(step)` profiles any PyTorch callable (one training iteration): one call unprofiled (lazy
state such as Adam's moments is made then), then `iterations` calls under the profiler with
record_shapes on the CPU. The operators' tree is walked from the top: a GEMM (mm, addmm, bmm,
baddbmm), a fused attention (its two products forward, four backward), a convolution (forward;
backward: one per gradient asked for) or a collective is one kernel and is not looked into; an
operator that calls others is looked into; any other leaf operator is an element-wise pass, a
`copy` of its largest tensor operand where it only moves data (copy_), else an `eltwise` pass of
that operand's bytes in its dtype, except views and allocations (no data moved). Every leaf
and every mapped kernel is one launch. Caramel's GPT trainer is profiled through its own
`train_step`, so the profile is what the trainer runs (data parallel: the gradients' all-reduce
over `dp` ranks is added, as one process cannot record it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

GEMMS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
CONVOLUTION, CONVOLUTION_BACKWARD = "aten::convolution", "aten::convolution_backward"
COLLECTIVES = {"c10d::allreduce_": "allreduce", "c10d::allgather_": "allgather"}
# leaf operators that move no data: views, allocations, scalars read back
NO_DATA = frozenset(
    f"aten::{name}"
    for name in (
        "view",
        "_unsafe_view",
        "reshape",
        "t",
        "transpose",
        "permute",
        "as_strided",
        "expand",
        "select",
        "slice",
        "unsqueeze",
        "squeeze",
        "detach",
        "alias",
        "unflatten",
        "flatten",
        "empty",
        "empty_like",
        "empty_strided",
        "resize_",
        "item",
        "_local_scalar_dense",
        "resolve_conj",
        "resolve_neg",
        "contiguous",
        "to",
        "lift_fresh",
        "view_as",
        "expand_as",
        "split",
        "chunk",
        "unbind",
        "narrow",
        "numel",
        "size",
        "stride",
        "is_nonzero",
        "_reshape_alias",
        "set_",
        "result_type",
    )
)
# data moved, no arithmetic: the suite's copy case
COPIES = frozenset({"aten::copy_"})
CONVERSIONS = frozenset(
    {"aten::to", "aten::_to_copy"}
)  # an operand converted before an operator's own pass
AUTOGRAD_NODE = re.compile(
    r"(Backward\d*|^detach_?)$"
)  # leaves that hand gradients on or detach: no data
# 2: attention as its own kernel, operators' own passes, unmapped operators listed
FORMAT = 2
BYTES = {
    "float": 4,
    "c10::BFloat16": 2,
    "c10::Half": 2,
    "double": 8,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
}
DTYPE_NAMES = {
    "float": "float32",
    "c10::BFloat16": "bfloat16",
    "c10::Half": "float16",
    "double": "float64",
}


@dataclass(frozen=True)
class Kernel:
    """One kernel as the microbenchmarks name it: gemm (M, N, K), conv (batch, channels, size,
    kernel), copy and collectives (bytes)."""

    kind: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    ranks: int = 1


@dataclass
class Operator:
    """What the walk needs of one profiler event (torch's FunctionEvent), so it can be tested
    without one."""

    name: str
    shapes: list[list[int]]
    dtypes: list[str]
    values: list[Any]  # the concrete (non-tensor) inputs, where the profiler kept them
    children: list[Operator]


def operators(events: Iterable[Any]) -> list[Operator]:
    """The roots of the profiler's operator tree (FunctionEvent: cpu_parent, cpu_children)."""

    def convert(event: Any) -> Operator:
        return Operator(
            event.name,
            [list(s) if isinstance(s, list | tuple) else [] for s in event.input_shapes or []],
            list(event.input_dtypes or []),
            list(getattr(event, "concrete_inputs", None) or []),
            [convert(child) for child in event.cpu_children],
        )

    return [convert(event) for event in events if event.cpu_parent is None]


def _dtype(op: Operator, index: int) -> str:
    name = op.dtypes[index] if index < len(op.dtypes) else "float"
    return DTYPE_NAMES.get(name, name)


def _bytes(op: Operator) -> int:
    sizes = [
        math.prod(shape) * BYTES.get(dtype, 4)
        for shape, dtype in zip(op.shapes, op.dtypes, strict=False)
        if shape
    ]
    return max(sizes, default=0)


def _largest_dtype(op: Operator) -> str:
    sizes = [
        (math.prod(shape) * BYTES.get(dtype, 4), dtype)
        for shape, dtype in zip(op.shapes, op.dtypes, strict=False)
        if shape
    ]
    return DTYPE_NAMES.get(max(sizes)[1], "float32") if sizes else "float32"


def _attention(op: Operator) -> list[Kernel]:
    """A fused attention, forward or backward: heads x sequences, tokens (√(queries·keys): the same
    work for cross-attention), head width, in the query's dtype."""
    backward = "backward" in op.name
    query, key = (op.shapes[1], op.shapes[2]) if backward else (op.shapes[0], op.shapes[1])
    shape = (math.prod(query[:-2]), round(math.sqrt(query[-2] * key[-2])), query[-1])
    return [
        Kernel(
            "attention_backward" if backward else "attention",
            shape,
            _dtype(op, 1 if backward else 0),
        )
    ]


def _convolution(op: Operator) -> list[Kernel]:
    """As the microbenchmark's same-padded C→C convolution of the same work: channels √(Cin·Cout),
    size √(H'·W') of the output."""
    backward = op.name == CONVOLUTION_BACKWARD
    images, weight = (op.shapes[1], op.shapes[2]) if backward else (op.shapes[0], op.shapes[1])
    output = op.shapes[0][2:] if backward else _output_size(op, images, weight)
    channels = round(math.sqrt(weight[0] * weight[1]))
    call = Kernel(
        "conv", (images[0], channels, round(math.sqrt(math.prod(output))), weight[2]), _dtype(op, 0)
    )
    return [call] * _gradients(op) if backward else [call]


def _output_size(op: Operator, images: list[int], weight: list[int]) -> list[int]:
    """A forward convolution's output size, from its stride and padding (1 and 0 where the
    profiler kept none)."""
    given = len(op.values) > 4
    stride = op.values[3] if given and op.values[3] else [1, 1]
    padding = op.values[4] if given and op.values[4] else [0, 0]
    return [
        (size + 2 * pad - k) // step + 1
        for size, pad, k, step in zip(images[2:], padding, weight[2:], stride, strict=False)
    ]


def _gradients(op: Operator) -> int:
    """How many of the input's and the weight's gradients a backward convolution computes (its
    output mask; both where the profiler kept none)."""
    mask = op.values[-1] if op.values and isinstance(op.values[-1], list) else [True, True]
    return sum(1 for wanted in mask[:2] if wanted)


ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def _moved(kernel: Kernel) -> int:
    """The bytes of a kernel's largest tensor."""
    size = ITEMSIZE.get(kernel.dtype, 4)
    if kernel.kind == "gemm":
        m, n, k = kernel.shape
        return size * max(m * k, k * n, m * n)
    if kernel.kind == "conv":
        batch, channels, side, _ = kernel.shape
        return size * batch * channels * side * side
    if kernel.kind.startswith("attention"):
        return size * math.prod(kernel.shape)
    return kernel.shape[0]


def _unmapped(op: Operator, unmapped: Counter[str] | None) -> None:
    """Count an operator outside aten that moves data but maps onto no kernel (autograd's nodes
    aside)."""
    if unmapped is not None and _bytes(op) and not AUTOGRAD_NODE.search(op.name):
        unmapped[op.name] += 1


def kernels_of(
    op: Operator, ranks: int = 1, unmapped: Counter[str] | None = None
) -> tuple[list[Kernel], int]:
    """The kernels under one operator, and its launches; `unmapped` counts the operators whose work
    maps onto no kernel (by name)."""
    mapped = _mapped(op, ranks)
    if mapped is not None:
        return mapped, 1
    if op.children:
        return _looked_into(op, ranks, unmapped)
    if not op.name.startswith("aten::"):
        _unmapped(op, unmapped)
        return [], 0
    if op.name in NO_DATA or not _bytes(op):
        return [], 1
    return [_own_pass(op, _bytes(op))], 1


def _mapped(op: Operator, ranks: int) -> list[Kernel] | None:
    """The kernels of an operator that is a microbenchmark kind itself (a product, a fused
    attention, a convolution, a collective); None for another."""
    if op.name in GEMMS:
        return [_gemm(op)]
    if op.name.startswith("aten::_scaled_dot_product_") and "math" not in op.name:
        return _attention(op)
    if op.name in (CONVOLUTION, CONVOLUTION_BACKWARD):
        return _convolution(op)
    if op.name in COLLECTIVES:
        return [Kernel(COLLECTIVES[op.name], (_bytes(op),), ranks=ranks)]
    return None


def _gemm(op: Operator) -> Kernel:
    """A (batched) matrix product as one product, the batch folded into its rows."""
    a, b = (op.shapes[i] for i in GEMMS[op.name])
    batch = a[0] if len(a) == 3 else 1
    return Kernel("gemm", (batch * a[-2], b[-1], a[-1]), _dtype(op, GEMMS[op.name][0]))


def _own_pass(op: Operator, size: int) -> Kernel:
    """An operator's own pass over its largest tensor (`size` bytes): a copy, else element-wise."""
    if op.name in COPIES:
        return Kernel("copy", (size,))
    return Kernel("eltwise", (size,), _largest_dtype(op))


def _looked_into(
    op: Operator, ranks: int, unmapped: Counter[str] | None
) -> tuple[list[Kernel], int]:
    """An operator that calls others: their kernels; and its own pass where it does one, i.e. where
    its largest tensor is larger than any its callees touch, conversions of its operands aside
    (add_, mul_ and div of Adam over the weights call only a scalar's conversion, layer norms and
    sums only allocations: their work is done in the operator itself, so counting the callees alone
    drops it)."""
    found: list[Kernel] = []
    launches, touched = 0, 0
    for child in op.children:
        more, count = kernels_of(child, ranks, unmapped)
        found += more
        launches += count
        if (
            child.name not in CONVERSIONS
        ):  # an operand converted first (add of float32 and bfloat16)
            touched = max([touched, *map(_moved, more)])
    own = _bytes(op)
    if op.name.startswith("aten::") and op.name not in NO_DATA and own > touched:
        found.append(_own_pass(op, own))
        launches += 1
    return found, launches


def profile_document(roots: list[Operator], iterations: int = 1, ranks: int = 1) -> dict[str, Any]:
    """The profile file's content (caramel.consumers.predict.profile reads it): kernels merged with
    their counts per iteration, and the launches per iteration."""
    counts: Counter[Kernel] = Counter()
    unmapped: Counter[str] = Counter()
    launches = 0
    for root in roots:
        found, count = kernels_of(root, ranks, unmapped)
        counts.update(found)
        launches += count
    kernels = [
        {
            "kind": k.kind,
            "shape": list(k.shape),
            "dtype": k.dtype,
            "count": n / iterations,
            "ranks": k.ranks,
        }
        for k, n in sorted(
            counts.items(), key=lambda item: (item[0].kind, item[0].shape, item[0].dtype)
        )
    ]
    return {
        "kernels": kernels,
        "launches": launches / iterations,
        "format": FORMAT,
        "unmapped": {name: n / iterations for name, n in sorted(unmapped.items())},
        "source": "torch.profiler",
        "torch": torch.__version__,
        "iterations": iterations,
        "captured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def capture(step: Callable[[], object], iterations: int = 1, ranks: int = 1) -> dict[str, Any]:
    """Profile `iterations` calls of `step` (one training iteration) after one unprofiled call."""
    from torch.profiler import ProfilerActivity, profile

    step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as profiler:
        for _ in range(iterations):
            step()
    return profile_document(operators(profiler.events()), iterations, ranks)


def gpt_step(
    hidden: int,
    layers: int,
    heads: int,
    seq: int,
    batch: int,
    vocab: int,
    ffn: int = 0,
    dp: int = 1,
    dtype: str = "float32",
    seed: int = 1234,
) -> tuple[Callable[[], object], int]:
    """One iteration of caramel's GPT trainer on one of `dp` ranks (its share of the batch), on the
    CPU; and the bytes of its gradients (what data parallel all-reduces once per iteration)."""
    from caramel.payloads.workloads import gpt

    torch.manual_seed(seed)
    model = gpt.GPT(vocab, seq, hidden, layers, heads, ffn or 4 * hidden)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    device = torch.device("cpu")
    precision = gpt.Precision(
        device,
        {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype],
    )
    sequences = max(1, batch // dp)
    tokens = torch.randint(
        0, vocab, (sequences, seq + 1), generator=torch.Generator().manual_seed(seed)
    )
    data = iter(lambda: (tokens[:, :-1], tokens[:, 1:]), None)
    gradient_bytes = 4 * sum(p.numel() for p in model.parameters())
    return (lambda: gpt.train_step(model, optimiser, data, device, 1, precision)), gradient_bytes


def capture_gpt(
    hidden: int,
    layers: int,
    heads: int,
    seq: int,
    batch: int,
    vocab: int,
    ffn: int = 0,
    dp: int = 1,
    dtype: str = "float32",
    iterations: int = 1,
) -> dict[str, Any]:
    threads = torch.get_num_threads()
    torch.set_num_threads(
        1
    )  # the kernels' shapes do not depend on it; one thread disturbs a shared machine least
    try:
        step, gradient_bytes = gpt_step(hidden, layers, heads, seq, batch, vocab, ffn, dp, dtype)
        document = capture(step, iterations)
    finally:
        torch.set_num_threads(threads)
    if dp > 1:
        document["kernels"].append(
            {
                "kind": "allreduce",
                "shape": [gradient_bytes],
                "dtype": "float32",
                "count": 1.0,
                "ranks": dp,
            }
        )
        document["launches"] += 1
    return document


def capture_resnet(
    batch: int,
    image: int = 32,
    width: int = 16,
    blocks: int = 1,
    classes: int = 100,
    iterations: int = 1,
) -> dict[str, Any]:
    """One SGD iteration of caramel's ResNet (blocks per stage, four stages) on synthetic images."""
    from caramel.payloads.workloads.resnet import ResNet

    torch.manual_seed(0)
    model = ResNet((blocks,) * 4, width, classes)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images, labels = torch.randn(batch, 3, image, image), torch.randint(0, classes, (batch,))

    def step() -> None:
        optimiser.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()  # type: ignore[no-untyped-call]  # torch's backward is not annotated
        optimiser.step()

    return capture(step, iterations)


def _fields(items: list[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        fields[key] = value if key == "dtype" else int(value)
    return fields


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="capture a training iteration's kernels with torch.profiler"
    )
    parser.add_argument("workload", choices=["gpt", "resnet", "step"])
    parser.add_argument(
        "fields",
        nargs="*",
        help="KEY=VALUE (gpt: hidden layers heads seq batch vocab [ffn dp "
        "dtype]; resnet: batch [image width blocks classes]); step: "
        "package.module:factory, a function returning the step to profile",
    )
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument(
        "--out", type=Path, help="the profile file (JSON; default: standard output)"
    )
    args = parser.parse_args(argv)
    if args.workload == "step":
        import importlib

        module, _, name = args.fields[0].partition(":")
        document = capture(getattr(importlib.import_module(module), name)(), args.iterations)
    else:
        make = capture_gpt if args.workload == "gpt" else capture_resnet
        document = make(**_fields(args.fields), iterations=args.iterations)
    text = json.dumps(document, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
