"""`bench predict --validate`: each model's leave-one-out error per metric over the history, and
which models the forecast uses."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO, TypedDict

from caramel.cli.predict_text import finite_json, learned_line, number_text, print_rows

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.consumers.predict.select import Choice
    from caramel.consumers.predict.service import Forecast


class _Validation(TypedDict):
    """One model's leave-one-out validation of one metric (`bench predict --validate`)."""

    metric: str
    model: str
    configurations: int
    predicted: int
    median_ape: float | None
    p90_ape: float | None
    used: bool
    used_outside_range: bool


def print_validation(forecast: Forecast, fmt: str, out: TextIO) -> None:
    """`bench predict --validate`: each model's leave-one-out error per metric, and which models
    predict uses."""
    entries = [entry for choice in forecast.choices for entry in _validations(choice)]
    if fmt == "json":
        doc = {"benchmark": forecast.benchmark, "system": forecast.system, "validation": entries}
        print(json.dumps(finite_json(doc), indent=1), file=out)
        return
    _print_validation_table(forecast, entries, out)


def _print_validation_table(forecast: Forecast, entries: list[_Validation], out: TextIO) -> None:
    print(
        f"leave-one-out over the history of {forecast.benchmark} "
        f"on {forecast.system or '(no system)'} "
        "(absolute percentage error of each held-out configuration's mean):",
        file=out,
    )
    if forecast.learned_from:
        print(learned_line(forecast), file=out)
    rows = [["metric", "model", "held out", "predicted", "median %", "p90 %", "used by predict"]]
    print_rows(rows + [_validation_row(e) for e in entries], out)


def _validations(choice: Choice) -> list[_Validation]:
    """A metric's validation per model; a metric too thin to validate: its model, unvalidated,
    used everywhere."""
    if not choice.validations:
        return [
            {
                "metric": choice.data.name,
                "model": choice.chosen,
                "configurations": len(choice.data.points),
                "predicted": 0,
                "median_ape": None,
                "p90_ape": None,
                "used": True,
                "used_outside_range": True,
            }
        ]
    outward = choice.outward[0].name if choice.outward else None
    return [
        {
            "metric": choice.data.name,
            "model": v.model,
            "configurations": v.held_out,
            "predicted": len(v.errors),
            "median_ape": v.median,
            "p90_ape": v.p90,
            "used": v.model == choice.chosen,
            "used_outside_range": v.model == outward,
        }
        for v in choice.validations
    ]


def _validation_row(e: _Validation) -> list[str]:
    used = ["inside the measured range"] if e["used"] else []
    used += ["outside it"] if e["used_outside_range"] else []
    return [
        e["metric"],
        e["model"],
        str(e["configurations"]),
        str(e["predicted"]),
        number_text(e["median_ape"]),
        number_text(e["p90_ape"]),
        ("<- used " + " and ".join(used)) if used else "",
    ]
