"""`bench predict`'s forecast by the history's models: one row per workpackage and metric with its
90 % interval and model (or the same as JSON)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from caramel.cli.predict_text import configuration_text, learned_line, number_text, print_rows
from caramel.cli.tables import CELL_WIDTH, clip, plural

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.consumers.predict.points import Prediction
    from caramel.consumers.predict.service import Forecast


def predictions_json(forecast: Forecast) -> dict[str, object]:
    doc: dict[str, object] = {
        "benchmark": forecast.benchmark,
        "system": forecast.system,
        "predictions": [p.as_json() for p in forecast.predictions],
    }
    if forecast.learned_from:
        doc["learned_from"] = {"system": forecast.learned_from, "peak_ratio": forecast.ratio}
    return doc


def print_predictions(forecast: Forecast, out: TextIO) -> None:
    """`bench predict`: one row per workpackage and metric, with its interval and model."""
    from caramel.consumers.predict.points import PREDICTION_INTERVAL, PREDICTION_LEVEL

    print(
        f"benchmark {forecast.benchmark} on {forecast.system or '(no system)'}: "
        f"{plural(len({p.id for p in forecast.predictions}), 'workpackage')} predicted",
        file=out,
    )
    if forecast.learned_from:
        print(learned_line(forecast), file=out)
    interval = f"{100 * PREDICTION_LEVEL:g}% interval"
    rows = [["id", "parameters", "metric", "value", interval, "points", "model", "extrapolated"]]
    print_rows(rows + [_prediction_row(p) for p in forecast.predictions], out)
    print(f"{interval}: {PREDICTION_INTERVAL} (docs/predict.md)", file=out)
    _note_unvalidated(forecast, out)


def _note_unvalidated(forecast: Forecast, out: TextIO) -> None:
    """A note naming the metrics whose models could not be validated: too few configurations."""
    thin = [c for c in forecast.choices if c.models and not c.validated]
    if thin:
        print(
            "note: too few measured configurations to validate a model for "
            f"{', '.join(c.data.name for c in thin)}; "
            "bench predict ... --suggest 3 says what to measure next",
            file=out,
        )


def _prediction_row(p: Prediction) -> list[str]:
    return [
        str(p.id),
        clip(configuration_text(p.parameters), CELL_WIDTH),
        p.metric + (f"[{p.unit}]" if p.unit else ""),
        number_text(p.value),
        f"{number_text(p.low)} .. {number_text(p.high)}",
        str(p.points),
        p.model,
        ("yes: " + _outside(p)) if p.extrapolated else "",
    ]


def _outside(p: Prediction) -> str:
    """The parameters outside the measured range: the first five, then how many more."""
    more = f",+{len(p.outside) - 5}" if len(p.outside) > 5 else ""
    return ",".join(p.outside[:5]) + more
