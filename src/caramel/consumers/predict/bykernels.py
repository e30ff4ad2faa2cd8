"""`--method kernels`: a benchmark predicted on a system from that system's kernel models summed
over each workpackage's execution profile (ml_perf_model's method; docs/microbench.md).

    time per iteration = bubble x (sum over the profile of count x kernel time + launches x
    overhead)

The overhead per kernel launch (the interpreter, the framework's dispatch: what no microbenchmark
times) is learned from runs of the benchmark: on the system itself where it has any, else on another
system that has both runs and microbenchmarks (named in the output), else taken as zero (said).
Interval: the kernel models' predictive spreads, taken as moving together (one model's errors are
correlated), plus the overhead's scatter over the configurations it was learned from.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from caramel.consumers.predict.declaration import METRIC
from caramel.consumers.predict.kernels import ATTENTION, MICROBENCH, Z90, KernelModels
from caramel.consumers.predict.points import Point, PredictError, Prediction, Target, load_points
from caramel.consumers.predict.profile import PROFILE, Profile, parse_profile

if TYPE_CHECKING:
    from caramel.stages.spec.model import Benchmark


@dataclass
class KernelSum:
    seconds: float  # the kernels' time of one iteration (before the bubble)
    sd: float  # seconds: the kernels' spread, summed as if correlated
    launches: float
    bubble: float


def kernel_sum(models: KernelModels, profile: Profile) -> KernelSum:
    total = spread = 0.0
    for call in profile.kernels:
        seconds, log_sd = models.predict(call)
        total += call.count * seconds
        spread += call.count * seconds * log_sd
    return KernelSum(total, spread, profile.launches, profile.bubble)


@dataclass
class Overhead:
    per_launch: float = 0.0  # seconds
    sd: float = 0.0
    system: str = ""  # where it was learned ("" : nowhere)
    configurations: int = 0
    residuals: list[float] = field(default_factory=list)


def profile_of(params: dict[str, object] | None, folder: Path | None = None) -> Profile | None:
    """The declared profile; `folder`: the benchmark file's (its profile files, its captured
    profiles)."""
    if not params or PROFILE not in params or METRIC not in params:
        return None
    return parse_profile(str(params[PROFILE]), folder)


def benchmark_folder(bench: Benchmark) -> Path:
    return Path(bench.file).resolve().parent if bench.file else Path.cwd()


def measured(
    history: str, benchmark: str, system: str, metric: str, folder: Path | None = None
) -> list[tuple[Profile, float, str]]:
    """(profile, measured mean, configuration key) of every configuration of `benchmark` measured on
    `system`."""
    try:
        data = load_points(history, benchmark, system)
    except PredictError:
        return []
    return [row for d in data if d.name == metric for row in _profiled(d.points, folder)]


def _profiled(points: list[Point], folder: Path | None) -> list[tuple[Profile, float, str]]:
    """(profile, mean of the positive samples, configuration key) of each point that declares a
    profile and has such samples."""
    rows = []
    for point in points:
        profile = profile_of(point.params, folder)
        good = [s for s in point.samples if s > 0]
        if profile is not None and good:
            rows.append((profile, statistics.fmean(good), point.key))
    return rows


def learn_overhead(
    models: KernelModels,
    rows: list[tuple[Profile, float, str]],
    system: str,
    leave_out: str | None = None,
) -> Overhead:
    residuals = []
    for profile, seconds, key in rows:
        if key == leave_out:
            continue
        kernels = kernel_sum(models, profile)
        residuals.append((seconds / kernels.bubble - kernels.seconds) / max(kernels.launches, 1.0))
    if not residuals:
        return Overhead()
    per_launch = max(0.0, statistics.median(residuals))
    sd = statistics.stdev(residuals) if len(residuals) > 1 else per_launch * 0.25
    return Overhead(per_launch, sd, system, len(residuals), residuals)


def systems_with_microbench(history: str) -> list[str]:
    from caramel.consumers.history.store import History

    with History.open(history) as store:
        return sorted({r.system for r in store.runs(MICROBENCH)})


def overhead_for(
    history: str,
    bench_name: str,
    system: str,
    metric: str,
    models: KernelModels,
    folder: Path | None = None,
) -> Overhead:
    """From the system's own runs of the benchmark, else from another system with runs and
    microbenchmarks."""
    rows = measured(history, bench_name, system, metric, folder)
    if rows:
        return learn_overhead(models, rows, system)
    for other in systems_with_microbench(history):
        if other == system:
            continue
        rows = measured(history, bench_name, other, metric, folder)
        if rows:
            return learn_overhead(KernelModels.from_history(history, other), rows, other)
    return Overhead()


def predict_time(
    models: KernelModels, profile: Profile, overhead: Overhead
) -> tuple[float, float, float]:
    """(value, low, high) of the time per iteration."""
    kernels = kernel_sum(models, profile)
    value = kernels.bubble * (kernels.seconds + overhead.per_launch * kernels.launches)
    sd = kernels.bubble * (kernels.sd + overhead.sd * kernels.launches)
    relative = sd / value if value > 0 else 0.0
    return value, value * math.exp(-Z90 * relative), value * math.exp(Z90 * relative)


def metric_of(targets: dict[str, list[Target]]) -> str:
    for table in targets.values():
        for target in table:
            if target.params and PROFILE in target.params and METRIC in target.params:
                return str(target.params[METRIC]).strip()
    return ""


def check_declared(bench: Benchmark, targets: dict[str, list[Target]]) -> None:
    if not metric_of(targets):
        raise PredictError(
            f"benchmark '{bench.name}' declares no execution profile: --method kernels needs one",
            hint=f"add the parameters {PROFILE} (gpt:hidden=...,layers=... or a .json profile) and "
            "predict_work_metric to its workpackages (docs/microbench.md)",
        )


@dataclass
class KernelForecast:
    models: KernelModels
    overhead: Overhead
    metric: str
    predictions: list[Prediction] = field(default_factory=list)
    end_to_end: list[float] = field(
        default_factory=list
    )  # leave-one-out % errors on the system's own runs
    profiles: list[str] = field(
        default_factory=list
    )  # each prediction's profile source (Profile.source)
    unmapped: dict[str, float] = field(
        default_factory=dict
    )  # operators no kernel kind times: the most per iteration
    approximated: list[str] = field(
        default_factory=list
    )  # kernel kinds the system's suite lacks, summed from others

    def note(self, profile: Profile) -> None:
        """What the prediction of `profile` leaves out or approximates (said in the output)."""
        self.profiles.append(profile.source)
        for name, count in profile.unmapped.items():
            self.unmapped[name] = max(count, self.unmapped.get(name, 0.0))
        for call in profile.kernels:
            if call.kind in ATTENTION and not self.models.has(call.kind, call.dtype):
                what = f"{call.kind}/{call.dtype} as GEMMs"
                if what not in self.approximated:
                    self.approximated.append(what)

    def gaps(self) -> str:
        """The unmapped operators and approximated kernels, in words ("" when none)."""
        parts = []
        if self.unmapped:
            parts.append(
                "operators no kernel model times (left out, per iteration): "
                + ", ".join(
                    f"{name} x{count:g}"
                    for name, count in sorted(self.unmapped.items(), key=lambda kv: -kv[1])
                )
            )
        if self.approximated:
            parts.append(
                f"no microbenchmark of {', '.join(self.approximated)} (run the suite again "
                "to add them)"
            )
        return "; ".join(parts)

    def profile_summary(self) -> str:
        """Where the predicted workpackages' profiles came from, in words."""
        captured = sorted({s for s in self.profiles if s.startswith("captured")})
        analytic = sum(1 for s in self.profiles if "analytic" in s)
        files = len(self.profiles) - len(captured) - analytic
        parts = (
            [
                f"{len(captured)} captured with torch.profiler, kept in "
                f"{Path(captured[0].removeprefix('captured (').rstrip(')')).parent}"
            ]
            if captured
            else []
        )
        parts += [f"{analytic} derived analytically from the model shape"] if analytic else []
        return "; ".join(parts + ([f"{files} from profile files"] if files else []))


def kernel_forecast(
    bench: Benchmark, history: str, system: str, targets: dict[str, list[Target]]
) -> KernelForecast:
    check_declared(bench, targets)
    models = KernelModels.from_history(history, system)
    metric, folder = metric_of(targets), benchmark_folder(bench)
    overhead = overhead_for(history, bench.name, system, metric, models, folder)
    out = KernelForecast(models, overhead, metric)
    for table in targets.values():
        for target in table:
            if not target.params or str(target.params.get(METRIC, "")).strip() != metric:
                continue
            profile = profile_of(target.params, folder)
            if profile is None:
                continue
            value, low, high = predict_time(models, profile, overhead)
            out.note(profile)
            out.predictions.append(
                Prediction(
                    target.id,
                    target.config,
                    metric,
                    "s",
                    value,
                    low,
                    high,
                    overhead.configurations,
                    not overhead.system,
                    "kernels",
                )
            )
    rows = measured(history, bench.name, system, metric, folder)
    for profile, seconds, key in rows if len(rows) >= 2 else []:
        found = predict_time(models, profile, learn_overhead(models, rows, system, leave_out=key))[
            0
        ]
        out.end_to_end.append(100.0 * abs(found - seconds) / seconds)
    return out
