"""From configurations to model inputs: which parameters vary, which are numbers, which categories.

A parameter constant over the history carries no information: it is left out, but a target with
another value is outside what was measured. A numeric parameter (all values > 0) enters as its
logarithm (power laws are linear there); a non-numeric one that varies is a category (one column
per level, scikit-learn's OneHotEncoder), never dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


@dataclass
class Encoder:
    """What the measured configurations say about each parameter."""

    logs: dict[str, tuple[float, float]] = field(
        default_factory=dict
    )  # numeric > 0: measured range
    linears: dict[str, tuple[float, float]] = field(default_factory=dict)  # numeric, some <= 0
    categories: dict[str, list[str]] = field(default_factory=dict)  # levels measured
    constants: dict[str, str] = field(default_factory=dict)

    @classmethod
    def fit(cls, configs: list[dict[str, str]]) -> Encoder:
        enc = cls()
        for name in sorted({n for c in configs for n in c}):
            enc._learn(name, [c.get(name, "") for c in configs])
        return enc

    def _learn(self, name: str, values: list[str]) -> None:
        """A parameter as the configurations gave it: a constant, a number (its measured span; in
        logs where all are above 0) or a category (its levels)."""
        if len(set(values)) == 1:
            self.constants[name] = values[0]
            return
        numbers = [n for n in map(_number, values) if n is not None]
        if len(numbers) < len(values):
            self.categories[name] = sorted(set(values))
            return
        span = (min(numbers), max(numbers))
        (self.logs if span[0] > 0 else self.linears)[name] = span

    @property
    def numeric(self) -> list[str]:
        return list(self.logs) + list(self.linears)

    @property
    def width(self) -> int:
        return len(self.numeric) + sum(len(levels) - 1 for levels in self.categories.values())

    def frame(self, configs: list[dict[str, str]]) -> pd.DataFrame:
        """Numeric columns (log where all > 0) and category columns, one row per configuration."""
        data: dict[str, Sequence[float | None] | Sequence[str]] = {}
        for name in self.logs:
            data[name] = [
                math.log(max(_number(c.get(name, "")) or math.nan, 1e-300)) for c in configs
            ]
        for name in self.linears:
            data[name] = [_number(c.get(name, "")) for c in configs]
        for name in self.categories:
            data[name] = [c.get(name, "") for c in configs]
        return pd.DataFrame(data, index=range(len(configs)))

    def declines(self, config: dict[str, str]) -> str:
        """Why a data-driven model cannot say anything about `config` ('' when it can)."""
        for name, value in self.constants.items():
            if config.get(name, value) != value:
                return f"{name} was always {value} in the history"
        for name, levels in self.categories.items():
            if config.get(name) not in levels:
                return (
                    f"{name} '{config.get(name)}' was never measured (measured: "
                    f"{', '.join(levels)})"
                )
        for name in self.numeric:
            if _number(config.get(name, "")) is None:
                return f"{name} '{config.get(name)}' is not a number"
        return ""

    def outside(self, config: dict[str, str]) -> list[str]:
        """The parameters of `config` outside the measured range (extrapolation)."""
        out = [n for n, v in self.constants.items() if config.get(n, v) != v]
        out += [n for n, levels in self.categories.items() if config.get(n) not in levels]
        for name, (low, high) in {**self.logs, **self.linears}.items():
            value = _number(config.get(name, ""))
            if value is None or not low - 1e-9 * abs(low) <= value <= high + 1e-9 * abs(high):
                out.append(name)
        return out
