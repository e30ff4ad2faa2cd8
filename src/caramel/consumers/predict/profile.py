"""A workload's execution profile: the kernels of one training iteration, with shapes and counts.

Declared by a workpackage's parameter `predict_profile` (docs/microbench.md):

    gpt:hidden=H layers=L heads=A seq=S batch=B vocab=V [ffn=F dp=D tp=T pp=P micro=M dtype=D]
        (spaces or commas between; in a benchmark file spaces, a comma there makes a sweep)
        derived analytically from the model shape (caramel's GPT trainer, Megatron-LM's GPT): per
        layer the QKV, attention-output and two MLP GEMMs, the fused attention forward and backward,
        the output head; backward = the data-gradient and weight-gradient GEMM of each; the
        element-wise passes (layer norms, residual adds, GELU, Adam) as memory copies;
        tensor parallel splits the GEMMs and adds two all-reduces per layer forward and two
        backward, data parallel one all-reduce of the gradients per iteration, pipeline parallel
        divides the layers and adds the bubble (P-1)/micro-batches.
    captured:gpt:hidden=H layers=L heads=A seq=S batch=B vocab=V [ffn=F dp=D dtype=D]
    captured:resnet:batch=B [image=I width=W blocks=N classes=C]
        the profile captured with torch.profiler from caramel's trainer itself
        (caramel.payloads.workloads.profile_capture) the first time it is needed, and kept beside
        the benchmark file in profiles/WORKLOAD-HASH.json, where later predictions (and other sites,
        with the file) read it instead of capturing again.
    FILE.json
        a profile file (relative to the benchmark file's folder), as the capture writes it:
        {"kernels": [{"kind", "shape", "dtype", "count", "ranks"}], "launches": N}

`launches` counts the kernel launches of one iteration: the per-launch overhead is learned from
runs (caramel.consumers.predict.bykernels).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caramel.consumers.predict.kernels import KernelCall
from caramel.consumers.predict.points import PredictError

PROFILE = "predict_profile"
CAPTURED = "captured:"
PROFILES = "profiles"  # beside the benchmark file: the captured profiles of its configurations
# caramel.payloads.workloads.profile_capture.FORMAT (kept equal by a test; importing it imports
# torch)
CAPTURE_FORMAT = 2
GPT_KEYS = ("hidden", "layers", "heads", "seq", "batch", "vocab")
GPT_OPTIONAL = ("ffn", "dp", "tp", "pp", "micro", "dtype")


@dataclass
class Profile:
    kernels: list[KernelCall] = field(default_factory=list)
    launches: float = 0.0  # kernel launches per iteration (each costs the learned overhead)
    bubble: float = 1.0  # pipeline parallel: the iteration's time factor
    source: str = ""
    unmapped: dict[str, float] = field(
        default_factory=dict
    )  # operators per iteration whose work no kernel kind times


def parse_profile(text: str, folder: Path | None = None) -> Profile:
    """The profile a `predict_profile` parameter declares; files relative to `folder` (the benchmark
    file's), where captured profiles are kept too."""
    text = str(text).strip()
    if text.startswith("gpt:"):
        return gpt_profile(**gpt_fields(text[4:]))
    if text.startswith(CAPTURED):
        return captured_profile(text[len(CAPTURED) :], folder or Path.cwd())
    path = _in_folder(Path(text), folder)
    if path.suffix == ".json" and path.is_file():
        return read_profile(path)
    raise PredictError(
        f"predict_profile: '{text}' is neither gpt:..., captured:... nor a .json profile file",
        hint="docs/microbench.md: the execution profile",
    )


def _in_folder(path: Path, folder: Path | None) -> Path:
    """A relative path in `folder` where the file is there; else as it is."""
    if folder is not None and not path.is_absolute() and (folder / path).is_file():
        return folder / path
    return path


def read_profile(path: Path) -> Profile:
    try:
        doc = json.loads(path.read_text())
        calls = [
            KernelCall(
                k["kind"],
                tuple(int(v) for v in k["shape"]),
                k.get("dtype", "float32"),
                float(k.get("count", 1)),
                int(k.get("ranks", 1)),
            )
            for k in doc["kernels"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PredictError(
            f"profile file {path}: not a profile ({exc})",
            hint='{"kernels": [{"kind", "shape", "dtype", "count", "ranks"}], "launches": N}',
        ) from None
    unmapped = {str(name): float(n) for name, n in (doc.get("unmapped") or {}).items()}
    return Profile(
        calls, float(doc.get("launches", len(calls))), source=str(path), unmapped=unmapped
    )


def _fields(
    text: str, keys: tuple[str, ...], optional: tuple[str, ...], example: str
) -> dict[str, Any]:
    """The KEY=NUMBER fields of a profile spec (and its dtype=NAME), each of `keys` given."""
    fields: dict[str, Any] = dict(_field(item, example) for item in text.replace(",", " ").split())
    missing = [k for k in keys if k not in fields]
    if missing:
        raise PredictError(
            f"predict_profile: {example.partition(':')[0]} needs {', '.join(missing)}", hint=example
        )
    _check_known(fields, keys + optional)
    return fields


def _field(item: str, example: str) -> tuple[str, Any]:
    """One KEY=NUMBER (or dtype=NAME) field as (key, whole number or dtype)."""
    key, _, value = item.partition("=")
    if key == "dtype":
        return "dtype", value.strip()
    try:
        return key.strip(), int(float(value))
    except ValueError:
        raise PredictError(f"predict_profile: '{item}' is not KEY=NUMBER", hint=example) from None


def _check_known(fields: dict[str, Any], keys: tuple[str, ...]) -> None:
    """A PredictError for a key not among `keys`, else for a number below 1."""
    unknown = sorted(set(fields) - set(keys))
    small = sorted(k for k, v in fields.items() if k != "dtype" and v < 1)
    if unknown or small:
        what = (
            f"unknown key(s) {', '.join(unknown)}"
            if unknown
            else f"{', '.join(small)} must be at least 1"
        )
        raise PredictError(f"predict_profile: {what}", hint="keys: " + " ".join(keys))


def gpt_fields(text: str) -> dict[str, Any]:
    return _fields(text, GPT_KEYS, GPT_OPTIONAL, "gpt:" + " ".join(f"{k}=N" for k in GPT_KEYS))


def captured_profile(spec: str, folder: Path) -> Profile:
    """The profile of caramel's own trainer captured with torch.profiler, kept in
    folder/profiles/."""
    workload, _, text = spec.partition(":")
    fields = _captured_fields(workload, text)
    key = f"{workload}:" + " ".join(f"{k}={fields[k]}" for k in sorted(fields))
    path = folder / PROFILES / f"{workload}-{hashlib.sha1(key.encode()).hexdigest()[:12]}.json"
    if not path.is_file() or _stale(path, key):
        try:
            from caramel.payloads.workloads import profile_capture
        except ImportError:  # no torch here to capture with: the GPT's analytic profile stands in
            return _analytic_instead(workload, spec, path, fields)
        capture = (
            profile_capture.capture_gpt if workload == "gpt" else profile_capture.capture_resnet
        )
        _keep(path, capture(**fields), key)
    profile = read_profile(path)
    profile.source = f"captured ({path})"
    return profile


def _captured_fields(workload: str, text: str) -> dict[str, Any]:
    """The fields of a captured:WORKLOAD:... spec: caramel's gpt (data parallel) or resnet."""
    if workload == "gpt":
        fields = gpt_fields(text)
        layout = sorted(k for k in ("tp", "pp", "micro") if k in fields)
        if layout:
            raise PredictError(
                f"predict_profile: a captured GPT profile is caramel's trainer, data parallel only "
                f"({', '.join(layout)} given)",
                hint="Megatron-LM layouts: the analytic gpt:... profile",
            )
        return fields
    if workload == "resnet":
        return _fields(text, ("batch",), ("image", "width", "blocks", "classes"), "resnet:batch=N")
    raise PredictError(
        f"predict_profile: captured:{workload}: caramel captures its gpt and resnet trainers",
        hint="captured:gpt:hidden=... or captured:resnet:batch=...; another workload: capture "
        "it with caramel.payloads.workloads.profile_capture and name the .json file",
    )


def _analytic_instead(workload: str, spec: str, path: Path, fields: dict[str, Any]) -> Profile:
    """Where torch is absent: a GPT's analytic profile; a PredictError for another workload."""
    if workload != "gpt":
        raise PredictError(
            f"predict_profile: captured:{spec}: no profile kept in {path.parent} and no "
            "torch here to capture it",
            hint="pip install torch, or copy the profiles/ folder from where it was captured",
        ) from None
    fallback = gpt_profile(**fields)
    fallback.source = "gpt (analytic: torch absent, not captured)"
    return fallback


def _keep(path: Path, document: dict[str, Any], key: str) -> None:
    """Write a captured profile, with the spec it was captured for."""
    document["spec"] = key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n")


def _stale(path: Path, key: str) -> bool:
    """A kept profile of another spec, or captured by an older walk (FORMAT: what the capture maps),
    where torch is here to capture it again."""
    try:
        document = json.loads(path.read_text())
    except ValueError:
        return True
    if document.get("spec") != key:
        return True
    if importlib.util.find_spec("torch") is None:
        return False  # no torch: the kept one is the best there is
    return int(document.get("format", 1)) < CAPTURE_FORMAT


def _gemm(out: list[KernelCall], m: int, n: int, k: int, count: float, dtype: str) -> None:
    """A forward GEMM and its two backward ones (data gradient, weight gradient)."""
    out.append(KernelCall("gemm", (m, n, k), dtype, count))
    out.append(KernelCall("gemm", (m, k, n), dtype, count))
    out.append(KernelCall("gemm", (k, n, m), dtype, count))


def gpt_profile(
    hidden: int,
    layers: int,
    heads: int,
    seq: int,
    batch: int,
    vocab: int,
    ffn: int = 0,
    dp: int = 1,
    tp: int = 1,
    pp: int = 1,
    micro: int = 0,
    dtype: str = "float32",
) -> Profile:
    """One iteration of one rank: `batch` is the global batch, spread over `dp` ranks."""
    ffn = ffn or 4 * hidden
    local_layers, local_heads = max(1, layers // pp), max(1, heads // tp)
    sequences = max(1, batch // dp)
    tokens, head_dim, h = sequences * seq, hidden // heads, hidden
    calls: list[KernelCall] = []
    _gemm(calls, tokens, 3 * h // tp, h, local_layers, dtype)  # Q, K, V
    for kind in (
        "attention",
        "attention_backward",
    ):  # fused (flash) attention: its products and softmax
        calls.append(
            KernelCall(kind, (sequences * local_heads, seq, head_dim), dtype, local_layers)
        )
    _gemm(calls, tokens, h, h // tp, local_layers, dtype)  # attention output
    _gemm(calls, tokens, ffn // tp, h, local_layers, dtype)
    _gemm(calls, tokens, h, ffn // tp, local_layers, dtype)
    _gemm(calls, tokens, vocab // tp, h, 1, dtype)  # output head (on the last stage)
    # element-wise passes of float32 tensors, forward once and backward twice
    passes = [(tokens * h, 3 * 6), (tokens * ffn // tp, 3 * 1)]
    calls += [KernelCall("copy", (4 * n,), count=local_layers * c) for n, c in passes]
    calls.append(KernelCall("copy", (4 * tokens * vocab // tp,), count=3 * 2))  # loss
    parameters = (12 * layers * h * h + (vocab + seq) * h) / (tp * pp)
    calls.append(
        KernelCall("copy", (int(4 * parameters),), count=4)
    )  # Adam: parameters, moments, gradient
    if tp > 1:
        calls.append(KernelCall("allreduce", (4 * tokens * h,), count=4 * local_layers, ranks=tp))
    if dp > 1:
        calls.append(KernelCall("allreduce", (int(4 * parameters),), count=1, ranks=dp))
    micro_batches = max(1, sequences // micro) if micro else 1
    launches = (
        local_layers * 3 * 14 + 3 * 6 + 20
    )  # per layer ~14 ops forward, x3 with backward; head, loss, Adam
    return Profile(calls, float(launches), 1.0 + (pp - 1) / micro_batches, source="gpt (analytic)")
