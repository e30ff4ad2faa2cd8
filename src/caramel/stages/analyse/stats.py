"""Statistics of one pattern's matches, kept as running sums so a 200 MB log never needs its matches
in memory, and the values JUBE puts in a result row (`name`, `name_first`, ..., `name_std`).

Conversions and formulas are JUBE's: an int match is `int(float(text))` ("nan" stays a float nan),
a match that does not convert is dropped (and counted, for one warning); `avg` is sum/cnt and
`std` the sample standard deviation from the running sums of values and squares.
"""

from __future__ import annotations

import math
from typing import Any

from caramel.errors import Location


def convert(text: str, kind: str) -> int | float | str:
    """One match as `kind`; raises ValueError (or OverflowError) when it is not one."""
    if kind == "int":
        return math.nan if text == "nan" else int(float(text))
    if kind == "float":
        return float(text)
    return text


def _numbers(matches: list[str], kind: str) -> list[Any]:
    """Every non-empty match as an int (`nan` stays nan) or a float; ValueError or OverflowError
    where one does not convert."""
    if kind == "int":
        return [math.nan if m == "nan" else int(float(m)) for m in matches if m]
    return [float(m) for m in matches if m]


def _running(
    values: list[Any], low: Any, high: Any, total: Any, total2: Any
) -> tuple[Any, Any, Any, Any]:
    """The min, max, sum and sum of squares after adding `values` in order."""
    for value in values:
        if value < low:
            low = value
        if value > high:
            high = value
        total += value
        try:
            total2 += value**2
        except OverflowError:
            total2 = math.nan
    return low, high, total, total2


class Accumulator:
    """Running statistics of the matches of one pattern (across the files of a workpackage)."""

    __slots__ = ("kind", "cnt", "first", "last", "min", "max", "sum", "sum2", "dropped", "bad")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.cnt = 0
        # a match as its kind (int | float, str for a string pattern); None until the first one.
        # Any: the kind is known at run time only, and the hot loop below is kept free of checks
        self.first: Any = None
        self.last: Any = None
        self.min: Any = None
        self.max: Any = None
        self.sum: Any = None
        self.sum2: Any = None
        self.dropped = 0  # matches that did not convert to `kind`
        self.bad = ""  # the first of them, for the warning

    def add(self, matches: list[str]) -> None:
        if self.kind == "string":
            self._add_texts(matches)
            return
        values = self._convert(matches)
        if values:
            self._add_numbers(values)

    def _add_texts(self, matches: list[str]) -> None:
        found = [m for m in matches if m]  # JUBE removes empty matches (groups that took no part)
        if not found:
            return
        if self.cnt == 0:
            self.first = found[0]
        self.last = found[-1]
        self.cnt += len(found)

    def _add_numbers(self, values: list[Any]) -> None:
        # Running sums in match order, as JUBE adds them (builtin sum() may round differently).
        rest = values
        if self.cnt == 0:
            self.first = self.min = self.max = self.sum = values[0]
            self.sum2 = _square(values[0])
            rest = values[1:]
        self.min, self.max, self.sum, self.sum2 = _running(
            rest, self.min, self.max, self.sum, self.sum2
        )
        self.last = values[-1]
        self.cnt += len(values)

    # numbers of `kind`: Any, as the fields above
    def _convert(self, matches: list[str]) -> list[Any]:
        try:  # the usual case: every match converts
            return _numbers(matches, self.kind)
        except (ValueError, OverflowError):
            return self._convert_each(matches)

    def _convert_each(self, matches: list[str]) -> list[Any]:
        """The matches that convert; the others counted as dropped, the first kept."""
        values: list[Any] = []
        for text in (m for m in matches if m):
            try:
                values.append(convert(text, self.kind))
            except (ValueError, OverflowError):
                self.dropped += 1
                self.bad = self.bad or text
        return values

    def merge(self, other: Accumulator) -> None:
        """Append `other`'s matches after this one's (the next file, the next iteration)."""
        if other.cnt == 0:
            self.dropped += other.dropped
            return
        if self.cnt == 0:
            for name in ("first", "min", "max", "sum", "sum2"):
                setattr(self, name, getattr(other, name))
        elif self.kind != "string":
            if other.min < self.min:
                self.min = other.min
            if other.max > self.max:
                self.max = other.max
            self.sum += other.sum
            self.sum2 += other.sum2
        self.last = other.last
        self.cnt += other.cnt
        self.dropped += other.dropped
        self.bad = self.bad or other.bad

    def values(self, name: str) -> dict[str, object]:
        """The row entries JUBE makes for pattern `name`; none when nothing matched."""
        if self.cnt == 0:
            return {}
        out: dict[str, object] = {
            name: self.first,
            f"{name}_first": self.first,
            f"{name}_last": self.last,
            f"{name}_cnt": self.cnt,
        }
        if self.kind != "string":
            out[f"{name}_min"] = self.min
            out[f"{name}_max"] = self.max
            out[f"{name}_sum"] = self.sum
            out[f"{name}_sum2"] = self.sum2
            out[f"{name}_avg"] = self.sum / self.cnt
            out[f"{name}_std"] = std(self.sum, self.sum2, self.cnt)
        return out

    def __getstate__(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for name, value in zip(self.__slots__, state, strict=True):
            setattr(self, name, value)


def _square(value: float) -> float:
    try:
        return value**2
    except OverflowError:  # a float too large to square: JUBE makes the sum of squares nan
        return math.nan


def std(total: float, total2: float, cnt: int) -> float:
    if cnt <= 1:
        return 0
    try:
        return math.sqrt(abs(total2 - total**2 / cnt) / (cnt - 1))
    except OverflowError:
        return 0


def default_values(
    name: str, kind: str, default: str, where: Location | None = None
) -> dict[str, object]:
    """The row entries of a pattern that matched nothing but has `default=`."""
    from caramel.stages.analyse.inputs import AnalyseError

    if kind not in ("int", "float"):
        return {name: default, f"{name}_cnt": 0, f"{name}_first": default, f"{name}_last": default}
    try:
        value = (
            (math.nan if default == "nan" else int(float(default)))
            if kind == "int"
            else float(default)
        )
    except (ValueError, OverflowError):
        raise AnalyseError(
            f"default={default!r} of pattern '{name}' is not a {kind}",
            where,
            hint=f"give a {kind} default or change the pattern's type",
        ) from None
    return {
        name: value,
        f"{name}_cnt": 0,
        f"{name}_first": value,
        f"{name}_last": value,
        f"{name}_sum": value,
        f"{name}_min": value,
        f"{name}_max": value,
        f"{name}_avg": value,
        f"{name}_sum2": value**2,
        f"{name}_std": 0,
    }
