"""How `bench predict`'s reports write (cli.predict and its predict_* modules): a number rounded as
tables round it, a configuration as `k=v,k=v`, JSON without infinities, rows as a table, and the
line saying a forecast learned from another system."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TextIO

# the models import numpy and scikit-learn: imported by the command, not by --help
if TYPE_CHECKING:
    from caramel.consumers.predict.service import Forecast


def finite_json(doc: object) -> object:
    """`doc` (JSON's data) with each infinite or NaN float as None (null)."""
    if isinstance(doc, dict):
        return {k: finite_json(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [finite_json(v) for v in doc]
    return None if isinstance(doc, float) and not math.isfinite(doc) else doc


def number_text(value: float | None) -> str:
    """A number as the tables round it (report.readable.number); "?" for none or no finite one."""
    from caramel.stages.report.readable import number

    return "?" if value is None or not math.isfinite(value) else number(value)


def print_rows(rows: list[list[str]], out: TextIO) -> None:
    """The first row is the header."""
    from caramel.cli.tables import print_table

    print_table(out, rows[0], rows[1:], indent=2)


def learned_line(forecast: Forecast) -> str:
    if not forecast.learned_from:
        return ""
    return (
        f"learned across systems: from the history of {forecast.learned_from}, "
        "times and rates scaled by the peak rates "
        f"{forecast.system}/{forecast.learned_from} = {forecast.ratio:.4g} "
        "(docs/predict.md: limits)"
    )


def configuration_text(parameters: dict[str, str]) -> str:
    """A configuration as `k=v,k=v`."""
    return ",".join(f"{k}={v}" for k, v in parameters.items())
