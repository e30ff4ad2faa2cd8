"""`bench predict --method kernels`: a system's kernel models summed over each workpackage's
execution profile, the line (or JSON) saying how a forecast was made, and `--validate`'s
leave-one-out of the kernel models."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO, TypedDict

from caramel.cli.predict_forecast import print_predictions
from caramel.cli.predict_text import finite_json, number_text, print_rows

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.consumers.predict.bykernels import KernelForecast
    from caramel.consumers.predict.service import Forecast


def method_json(forecast: Forecast) -> dict[str, object]:
    doc: dict[str, object] = {"method": forecast.method, "why": forecast.why}
    found = forecast.kernels
    if found is not None:
        doc["microbenchmark_runs"] = found.models.runs
        doc["overhead"] = {
            "seconds_per_launch": found.overhead.per_launch,
            "learned_on": found.overhead.system or None,
            "configurations": found.overhead.configurations,
        }
        doc["profiles"] = found.profile_summary()
        doc["unmapped_operators"] = found.unmapped
        doc["approximated_kernels"] = found.approximated
    return doc


def method_line(forecast: Forecast) -> str:
    why = f" ({forecast.why})" if forecast.why else ""
    if forecast.kernels is None:
        return f"method: history: the models of bench predict over this benchmark's runs{why}"
    found = forecast.kernels
    runs = ", ".join(found.models.runs) or "?"
    overhead = found.overhead
    learned = (
        f"overhead {overhead.per_launch * 1e6:.3g} us per kernel launch, learned from "
        f"{overhead.configurations} configuration(s) on {overhead.system}"
        if overhead.system
        else "no per-launch overhead (no system has runs of this benchmark and microbenchmarks)"
    )
    gaps = f"; {found.gaps()}" if found.gaps() else ""
    return (
        f"method: kernels: {forecast.system}'s kernel models (microbenchmark run {runs}) "
        "summed over each "
        f"workpackage's execution profile ({found.profile_summary()}){why}; {learned}{gaps}"
    )


class _KernelValidation(TypedDict):
    """One kernel's leave-one-out validation (`bench predict --method kernels --validate`)."""

    kind: str
    dtype: str
    cases: int
    median_ape: float | None
    max_ape: float | None
    model: str


def print_kernel_forecast(forecast: Forecast, fmt: str, validate: bool, out: TextIO) -> None:
    """`bench predict --method kernels`: the predictions, or (--validate) the kernel models'
    leave-one-out errors and the end-to-end error."""
    found = forecast.kernels
    assert found is not None, "the kernels method's forecast holds its kernel models"
    kinds = [_kernel_validation(*v) for v in found.models.validation()] if validate else []
    if fmt == "json":
        print(
            json.dumps(finite_json(_kernels_json(forecast, found, kinds, validate)), indent=1),
            file=out,
        )
        return
    print(method_line(forecast), file=out)
    if validate:
        _print_kernel_validation(forecast, found, kinds, out)
        return
    print_predictions(forecast, out)


def _kernel_validation(
    kind: str, dtype: str, cases: int, errors: list[float], model: str
) -> _KernelValidation:
    return {
        "kind": kind,
        "dtype": dtype,
        "cases": cases,
        "median_ape": _median(errors),
        "max_ape": max(errors) if errors else None,
        "model": model,
    }


def _kernels_json(
    forecast: Forecast, found: KernelForecast, kinds: list[_KernelValidation], validate: bool
) -> dict[str, object]:
    doc: dict[str, object] = {
        "benchmark": forecast.benchmark,
        "system": forecast.system,
        **method_json(forecast),
        "predictions": [p.as_json() for p in forecast.predictions],
    }
    if validate:
        doc["kernels_validation"] = kinds
        doc["end_to_end_ape"] = found.end_to_end
    return doc


def _print_kernel_validation(
    forecast: Forecast, found: KernelForecast, kinds: list[_KernelValidation], out: TextIO
) -> None:
    print(
        f"leave-one-out of {forecast.system}'s kernel models "
        "(each microbenchmark case predicted from the others):",
        file=out,
    )
    rows = [["kernel", "dtype", "cases", "median %", "worst %", "model"]]
    rows += [
        [
            k["kind"],
            k["dtype"],
            str(k["cases"]),
            number_text(k["median_ape"]),
            number_text(k["max_ape"]),
            k["model"],
        ]
        for k in kinds
    ]
    print_rows(rows, out)
    if found.end_to_end:
        print(
            f"end to end on {forecast.system}'s own runs of {forecast.benchmark} "
            "(overhead learned from the others): "
            f"median {number_text(_median(found.end_to_end))} %, "
            f"worst {number_text(max(found.end_to_end))} %",
            file=out,
        )


def _median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None
