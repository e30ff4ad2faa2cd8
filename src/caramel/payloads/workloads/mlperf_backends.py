"""The inference backends of the MLPerf benchmark: a trained encoder made into a predictor,
`tokens (n, seq_len) int64 -> logits (n, seq_len, 2) float32`, by PyTorch or ONNX Runtime, in the
precisions each backend has on each device (`SUPPORTED`).

PyTorch: float32; bfloat16 (the weights cast); float16 on CUDA; int8 by its dynamic quantization of
the linear layers (CPU only, as PyTorch quantizes). ONNX Runtime: the model exported to ONNX,
float32 on its CPU or CUDA execution provider, int8 by ONNX Runtime's dynamic quantization (CPU).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path

import numpy as np


class Backend(Enum):
    PYTORCH = "pytorch"
    ONNXRUNTIME = "onnxruntime"


class Precision(Enum):
    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    INT8 = "int8"


SUPPORTED: dict[tuple[Backend, str], tuple[Precision, ...]] = {
    (Backend.PYTORCH, "cpu"): (Precision.FP32, Precision.BF16, Precision.INT8),
    (Backend.PYTORCH, "cuda"): (Precision.FP32, Precision.FP16, Precision.BF16),
    (Backend.ONNXRUNTIME, "cpu"): (Precision.FP32, Precision.INT8),
    (Backend.ONNXRUNTIME, "cuda"): (Precision.FP32,),
}

Predictor = Callable[[np.ndarray], np.ndarray]


class BackendError(Exception):
    """The backend, device or precision asked for is not there: says which and what is."""


def check(backend: Backend, device: str, precision: Precision) -> None:
    have = SUPPORTED.get((backend, device))
    if have is None:
        raise BackendError(f"device {device!r} is not one of cpu, cuda")
    if precision not in have:
        raise BackendError(
            f"{backend.value} on {device} has no {precision.value}: it runs "
            + ", ".join(p.value for p in have)
        )


def predictor(
    module: object, backend: Backend, device: str, precision: Precision, work: Path
) -> Predictor:
    """The trained `module` (a float32 torch module on the CPU) as a predictor."""
    check(backend, device, precision)
    if backend is Backend.PYTORCH:
        return _torch(module, device, precision)
    return _onnxruntime(module, device, precision, work)


def _torch(module: object, device: str, precision: Precision) -> Predictor:
    import torch

    model: torch.nn.Module = module  # type: ignore[assignment]
    if device == "cuda" and not torch.cuda.is_available():
        raise BackendError("device cuda: torch sees no CUDA device (torch.cuda.is_available())")
    if precision is Precision.INT8:
        # torch's quantize_dynamic is not annotated
        model = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            model, {torch.nn.Linear}, torch.qint8
        )
        # the encoder layer's fused fast path reads `linear1.weight.device`, which a quantized
        # linear layer does not have: the plain path runs the quantized layers
        torch.backends.mha.set_fastpath_enabled(False)
    elif precision is not Precision.FP32:
        model = model.to(torch.bfloat16 if precision is Precision.BF16 else torch.float16)
    model = model.to(device).eval()

    def run(tokens: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            logits = model(torch.from_numpy(tokens).to(device))
        array: np.ndarray = logits.float().cpu().numpy()
        return array

    return run


def _onnxruntime(module: object, device: str, precision: Precision, work: Path) -> Predictor:
    try:
        import onnxruntime
    except ImportError:
        raise BackendError(
            "the onnxruntime backend needs ONNX Runtime: pip install 'caramel[mlperf]'"
        ) from None
    import torch

    path = work / "model.onnx"
    length = module.position.shape[0]  # type: ignore[attr-defined]
    example = torch.zeros((1, length), dtype=torch.int64)
    torch.onnx.export(
        module,  # type: ignore[arg-type]
        (example,),
        str(path),
        input_names=["tokens"],
        output_names=["logits"],
        dynamic_axes={"tokens": {0: "batch"}, "logits": {0: "batch"}},
        dynamo=False,  # the TorchScript exporter: needs onnx only, not onnxscript
    )
    if precision is Precision.INT8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantized = work / "model.int8.onnx"
        quantize_dynamic(str(path), str(quantized), weight_type=QuantType.QInt8)
        path = quantized
    providers = ["CUDAExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    if providers[0] not in onnxruntime.get_available_providers():
        raise BackendError(
            f"ONNX Runtime has no {providers[0]} (it has "
            + ", ".join(onnxruntime.get_available_providers())
            + "): install onnxruntime-gpu for CUDA"
        )
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = onnxruntime.InferenceSession(str(path), options, providers=providers)

    def run(tokens: np.ndarray) -> np.ndarray:
        return np.asarray(session.run(["logits"], {"tokens": tokens})[0], dtype=np.float32)

    return run
