"""Kernel performance models of one system, learned from its microbenchmark runs
(docs/microbench.md).

    models = KernelModels.from_history(history_path, system)  # the `microbench` benchmark's figures
    seconds, log_sd = models.predict(KernelCall("gemm", (512, 256, 1024)))
    models.validation()                                       # leave-one-out error per kernel kind

One model per kernel kind and dtype: a Gaussian process (scikit-learn) over the logarithms of the
shape features and of the kernel's work (FLOPs or bytes) predicting the log of the best time;
kernel: a linear term (DotProduct: a power law, what it extrapolates to), a smooth correction (RBF,
one length per feature) and the noise (WhiteKernel). With fewer than six cases of a kind, a
power law in the work (log time = a + b log work, least squares), with one case or one work a
constant rate.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtri

from caramel.consumers.predict.points import MetricData, PredictError

if TYPE_CHECKING:
    from sklearn.gaussian_process.kernels import Kernel
    from sklearn.pipeline import Pipeline

MICROBENCH = "microbench"
SECONDS = "Seconds"
# a 90 % interval is ± Z90 sd: scipy's normal quantile (the function stats.norm.ppf calls)
Z90 = float(ndtri(0.95))
COLLECTIVES = ("allreduce", "allgather")
# the fused scaled-dot-product attention, forward and backward
ATTENTION = ("attention", "attention_backward")
GP_CASES = 6  # cases from which a kind gets a Gaussian process; from 2 (different work) a power law


@dataclass(frozen=True)
class KernelCall:
    """One kernel of an execution profile: kind, shape (gemm M,N,K; copy and collectives bytes;
    eltwise bytes of its largest operand; conv batch,channels,size,kernel; attention heads x
    sequences, tokens, head width), dtype, how often per iteration, and for collectives the
    ranks."""

    kind: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    count: float = 1.0
    ranks: int = 1

    def work(self) -> float:
        if self.kind == "gemm":
            m, n, k = self.shape
            return 2.0 * m * n * k
        if self.kind == "conv":
            batch, channels, size, kernel = self.shape
            return 2.0 * batch * channels * channels * kernel * kernel * size * size
        if self.kind in ATTENTION:
            heads, seq, width = self.shape
            return (4.0 if self.kind == "attention" else 10.0) * heads * seq * seq * width
        return float(self.shape[0])

    def as_gemms(self) -> list[KernelCall]:
        """An attention as its products (Q·Kᵀ and P·V forward; backward the scores again and four
        gradients), the heads folded into the rows: where a system's suite has no attention case."""
        heads, seq, width = self.shape
        scores, context = (
            KernelCall("gemm", shape, self.dtype, self.count)
            for shape in ((heads * seq, seq, width), (heads * seq, width, seq))
        )
        if self.kind == "attention":
            return [scores, context]
        return [scores, context, context, scores, context]

    def features(self) -> list[float]:
        return [math.log(max(v, 1)) for v in (*self.shape, self.work())] + (
            [math.log(self.ranks)] if self.kind in COLLECTIVES else []
        )


def parse_case(case: str, ranks: int = 1) -> KernelCall:
    """A microbenchmark case (`gemm:MxNxK:DTYPE`, `copy:BYTES`, `eltwise:BYTES:DTYPE`,
    `conv:BxCxS:K`, `attention:BHxSxD:DTYPE`, `allreduce:BYTES`)."""
    kind, _, rest = case.strip().partition(":")
    parts = rest.split(":")
    try:
        shape = tuple(int(x) for x in parts[0].split("x"))
        call = _case_call(kind, shape, parts[1:], ranks)
    except (ValueError, IndexError):
        call = None
    if call is None:
        raise PredictError(
            f"not a microbenchmark case: '{case}'",
            hint="KIND:SHAPE as benchmarks/microbench.yaml writes them"
            " (gemm:MxNxK:DTYPE, copy:BYTES, ...)",
        )
    return call


# the dimensions of each kind's shape in a case; a conv's kernel size follows its shape
_DIMENSIONS = {
    "gemm": 3,
    "conv": 3,
    **dict.fromkeys(ATTENTION, 3),
    "eltwise": 1,
    "copy": 1,
    **dict.fromkeys(COLLECTIVES, 1),
}
_TYPED = ("gemm", *ATTENTION, "eltwise")  # the kinds whose case may name a dtype


def _case_call(kind: str, shape: tuple[int, ...], more: list[str], ranks: int) -> KernelCall | None:
    """The call a case's kind, shape and further fields (dtype; a conv's kernel size) make; None
    for an unknown kind or a shape of other dimensions."""
    if len(shape) != _DIMENSIONS.get(kind):
        return None
    if kind == "conv":
        return KernelCall(kind, (*shape, int(more[0]) if more else 3))
    if kind in _TYPED:
        return KernelCall(kind, shape, more[0] if more else "float32")
    return KernelCall(kind, shape, ranks=ranks if kind in COLLECTIVES else 1)


@dataclass
class KindModel:
    """The model of one kernel kind and dtype, and its leave-one-out errors."""

    kind: str
    dtype: str
    calls: list[KernelCall] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # best time of each case
    regressor: Pipeline | None = None  # sklearn's (no type information)
    log_rate: float = 0.0  # the constant-rate fallback: log(work / seconds)
    spread: float = 0.0
    power: tuple[float, float] | None = None  # log seconds = a + b log work (three to five cases)

    @property
    def method(self) -> str:
        if self.regressor is not None:
            return "gaussian-process"
        return "power law" if self.power else "constant rate"

    def fit(self, kernel: Kernel | None = None) -> KindModel:
        logs = [math.log(c.work() / s) for c, s in zip(self.calls, self.seconds, strict=True)]
        self.log_rate = statistics.fmean(logs)
        self.spread = statistics.stdev(logs) if len(logs) > 1 else 0.25
        if self._takes_gp(kernel):
            self.regressor = _regressor(self.calls, self.seconds, kernel)
        elif len({c.work() for c in self.calls}) >= 2:
            self._fit_power_law()
        return self

    def _takes_gp(self, kernel: Kernel | None) -> bool:
        """Whether the cases are enough for a Gaussian process: GP_CASES of them, or two given a
        kernel (leave-one-out's refit)."""
        return len(self.calls) >= GP_CASES or (kernel is not None and len(self.calls) >= 2)

    def _fit_power_law(self) -> None:
        """log seconds = a + b log work by least squares; the spread from its residuals (the
        constant rate's where they are all 0)."""
        x, y = np.log([c.work() for c in self.calls]), np.log(self.seconds)
        slope, intercept = np.polyfit(x, y, 1)
        self.power = (float(intercept), float(slope))
        residuals = y - (intercept + slope * x)
        self.spread = float(np.sqrt(np.sum(residuals**2) / max(len(x) - 2, 1))) or self.spread

    def predict(self, call: KernelCall) -> tuple[float, float]:
        """Seconds of one call, and the standard deviation of its log."""
        if self.regressor is None and self.power is not None:
            log_seconds = self.power[0] + self.power[1] * math.log(max(call.work(), 1.0))
            return math.exp(log_seconds), self.spread
        if self.regressor is None:
            return call.work() / math.exp(self.log_rate), self.spread
        mean, sd = self.regressor.predict(np.array([call.features()]), return_std=True)
        return math.exp(float(mean[0])), float(sd[0])

    def leave_one_out(self) -> list[float]:
        """Absolute percentage error of each case predicted from the others (hyperparameters
        kept)."""
        kernel = self.regressor[-1].kernel_ if self.regressor is not None else None
        errors = []
        for i in range(len(self.calls) if len(self.calls) >= 3 else 0):
            rest = KindModel(
                self.kind,
                self.dtype,
                self.calls[:i] + self.calls[i + 1 :],
                self.seconds[:i] + self.seconds[i + 1 :],
            )
            # a Gaussian process keeps its kernel, on 5 cases too
            found, _ = rest.fit(kernel).predict(self.calls[i])
            errors.append(100.0 * abs(found - self.seconds[i]) / self.seconds[i])
        return errors


def _regressor(
    calls: list[KernelCall], seconds: list[float], kernel: Kernel | None = None
) -> Pipeline:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, WhiteKernel
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.array([c.features() for c in calls])
    width, given = x.shape[1], kernel is not None
    kernel = kernel or (
        DotProduct(1.0, (1e-3, 1e3))
        + ConstantKernel(0.1, (1e-4, 1e2)) * RBF(np.ones(width), (1e-1, 1e3))
        + WhiteKernel(1e-2, (1e-6, 1.0))
    )
    gp = GaussianProcessRegressor(
        kernel,
        normalize_y=True,
        random_state=0,
        n_restarts_optimizer=0 if given else 1,
        optimizer=None if given else "fmin_l_bfgs_b",
    )
    pipeline = make_pipeline(StandardScaler(), gp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        pipeline.fit(x, np.log(seconds))
    return pipeline


@dataclass
class KernelModels:
    """Every kernel model of one system, and which microbenchmark runs they were learned from."""

    system: str
    kinds: dict[tuple[str, str], KindModel] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)  # history run keys of the microbenchmark runs

    @classmethod
    def from_rows(
        cls, system: str, rows: list[tuple[str, int, list[float]]], runs: list[str] | None = None
    ) -> KernelModels:
        """From (case, ranks, samples) rows: the best sample of each case counts."""
        models = cls(system, runs=list(runs or []))
        for case, ranks, samples in rows:
            good = [s for s in samples if s == s and s > 0]
            if not good:
                continue
            call = parse_case(case, ranks)
            model = models.kinds.setdefault(
                (call.kind, call.dtype), KindModel(call.kind, call.dtype)
            )
            model.calls.append(call)
            model.seconds.append(min(good))
        for model in models.kinds.values():
            model.fit()
        return models

    @classmethod
    def from_history(cls, path: str, system: str) -> KernelModels:
        from caramel.consumers.history.store import History
        from caramel.consumers.predict.points import load_points

        record = f"bench run microbench --tag {system or 'SYSTEM'}"
        try:
            data = load_points(path, MICROBENCH, system, record=record)
        except PredictError as exc:
            raise PredictError(
                f"no microbenchmarks of system '{system or '(none)'}' in the history ({path}): "
                "--method kernels needs them",
                hint=f"run the suite once: {record} && bench result -i last",
            ) from exc
        rows = _case_rows(data, system)
        with History.open(path) as history:
            runs = [r.run_key for r in history.runs(MICROBENCH) if r.system == system]
        return cls.from_rows(system, rows, runs)

    def model_for(self, call: KernelCall) -> KindModel:
        model = self.kinds.get((call.kind, call.dtype)) or self.kinds.get((call.kind, "float32"))
        if model is None and call.kind == "eltwise":  # a suite run before it had element-wise cases
            model = self.kinds.get(("copy", "float32"))
        if model is None:
            have = ", ".join(sorted(f"{k}/{d}" for k, d in self.kinds)) or "none"
            raise PredictError(
                f"no microbenchmark of kind '{call.kind}' ({call.dtype}) on system '{self.system}'"
                f" (it has: {have})",
                hint="run benchmarks/microbench.yaml with the tags that add it",
            )
        return model

    def has(self, kind: str, dtype: str) -> bool:
        return (kind, dtype) in self.kinds or (kind, "float32") in self.kinds

    def predict(self, call: KernelCall) -> tuple[float, float]:
        if call.kind in COLLECTIVES and call.ranks <= 1:
            return 0.0, 0.0  # one rank exchanges nothing
        if call.kind in ATTENTION and not self.has(call.kind, call.dtype):
            found = [self.predict(gemm) for gemm in call.as_gemms()]
            seconds = sum(s for s, _ in found)
            return seconds, max((sd for _, sd in found), default=0.0)
        return self.model_for(call).predict(call)

    def validation(self) -> list[tuple[str, str, int, list[float], str]]:
        """Per kind: (kind, dtype, cases, leave-one-out errors, method)."""
        return [
            (m.kind, m.dtype, len(m.calls), m.leave_one_out(), m.method)
            for m in self.kinds.values()
        ]


def _case_rows(data: list[MetricData], system: str) -> list[tuple[str, int, list[float]]]:
    """(case, ranks, samples) of each configuration of the microbenchmark's Seconds column."""
    seconds = next((d for d in data if d.name == SECONDS), None)
    if seconds is None:
        raise PredictError(
            f"the microbenchmark runs of '{system}' hold no '{SECONDS}' column",
            hint="run the shipped suite: benchmarks/microbench.yaml",
        )
    return [
        (p.config.get("Kernel", ""), int(float(p.config.get("Ranks", 1) or 1)), p.samples)
        for p in seconds.points
    ]
