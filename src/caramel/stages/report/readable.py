"""Result tables for people: what `bench result` shows on a terminal and the HTML pages show.

A program reads the table's own style at full precision (a pipe, `--style csv|json`, the result
files); a person reads this. Numbers are rounded to their spread where the table has one (a
`bench run --repeat N` table's `<name>_sd`: the sd to 2 significant digits, the mean and its
interval to the same decimal), else to SIGNIFICANT significant digits, never in exponent form
between 1e-4 and 1e15; a column's own `format` stays where it shows as many digits. A column empty
in every row (`JobID` of a local run) is left out. A table wider than the terminal is folded: its
columns in groups that fit, each group repeating the first column, one under the other (as a
wide `git log` is paged, but readable without a pager).
"""

from __future__ import annotations

import dataclasses
import math

from caramel.stages.report.table import TableData, text_table

SIGNIFICANT = 4
SPREAD_DIGITS = 2  # an sd is shown to 2 significant digits, the mean to the same decimal
SPREAD_SUFFIX = "_sd"
SPREAD_SIBLINGS = ("", "_ci_low", "_ci_high")  # rounded like the sd of their figure
_PLAIN_RANGE = (1e-4, 1e15)  # outside, a number needs its exponent


def number(value: float, decimals: int | None = None) -> str:
    """`value` to `decimals` places (then trailing zeros are kept: they state the precision), or to
    SIGNIFICANT significant digits without trailing zeros."""
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if value and not _PLAIN_RANGE[0] <= size < _PLAIN_RANGE[1]:
        return f"{value:.{SIGNIFICANT}g}"
    if decimals is not None:
        return f"{value:.{max(0, min(decimals, 15))}f}"
    places = 0 if not value else max(0, SIGNIFICANT - 1 - math.floor(math.log10(size)))
    text = f"{value:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def spread_decimals(spread: float) -> int | None:
    """The decimals that show `spread` to SPREAD_DIGITS significant digits (None: no spread)."""
    if not math.isfinite(spread) or spread <= 0:
        return None
    return max(0, SPREAD_DIGITS - 1 - math.floor(math.log10(spread)))


def significant_digits(text: str) -> int:
    """How many significant digits a formatted number shows (`0.04`: 1, `11499.87`: 7)."""
    digits = text.lstrip("+-").split("e")[0].split("E")[0].replace(".", "").lstrip("0")
    return len(digits) if digits.isdigit() else 0


def cell(value: object, formatted: str, decimals: int | None = None, declared: bool = True) -> str:
    """The cell a person reads for a value the table formatted as `formatted` (`declared`: by the
    column's own `format`, else as Python writes a float)."""
    if isinstance(value, bool) or not isinstance(value, float):
        return formatted
    if declared and decimals is None and significant_digits(formatted) >= SIGNIFICANT:
        return formatted  # the column's own format shows enough
    return number(value, decimals)


def for_people(data: TableData) -> TableData:
    """`data` with rounded cells and without the columns empty in every row."""
    keep = _filled_columns(data)
    spreads = _spread_columns([key.name for key in data.keys])
    return dataclasses.replace(
        _columns(data, keep),
        cells=[
            [_rounded(data, spreads, values, texts, i) for i in keep]
            for values, texts in zip(data.values, data.cells, strict=True)
        ],
    )


def _filled_columns(data: TableData) -> list[int]:
    """The columns with a value in some row (every column of a table without rows)."""
    if not data.values:
        return list(range(len(data.keys)))
    return [
        i for i in range(len(data.keys)) if any(row[i] not in (None, "") for row in data.values)
    ]


def _rounded(
    data: TableData, spreads: dict[int, int], values: list[object], texts: list[str], i: int
) -> str:
    """Column i's cell of a row, rounded to the spread of its figure in the row, if it has one."""
    source = spreads.get(i)
    spread = values[source] if source is not None else None
    decimals = spread_decimals(spread) if isinstance(spread, float) else None
    return cell(values[i], texts[i], decimals, bool(data.keys[i].format))


def _spread_columns(names: list[str]) -> dict[int, int]:
    """Column -> the column of its spread (`x`, `x_sd`, `x_ci_low`, `x_ci_high` -> `x_sd`)."""
    found = {}
    for i, name in enumerate(names):
        if not name.endswith(SPREAD_SUFFIX):
            continue
        base = name[: -len(SPREAD_SUFFIX)]
        for suffix in (*SPREAD_SIBLINGS, SPREAD_SUFFIX):
            if base + suffix in names:
                found[names.index(base + suffix)] = i
    return found


def folded(data: TableData, width: int) -> str:
    """The table as `pretty` text, its columns in groups no wider than `width` (the first column
    in each group), the groups one under the other; a transposed table is not folded."""
    if data.transpose or not data.keys:
        return text_table(data, "pretty")
    parts = []
    for n, group in enumerate(_groups(_widths(data), width)):
        text = text_table(_columns(data, group), "pretty")
        if n:  # the table's name and caption once, above the first group
            text = text.split("\n", 2 if data.caption else 1)[-1]
        parts.append(text)
    return "\n".join(parts)


def _widths(data: TableData) -> list[int]:
    """Each column's width in `pretty` text, with its separator."""
    return [
        max([len(key.heading), *(len(row[i]) for row in data.cells)]) + 3
        for i, key in enumerate(data.keys)
    ]


def _groups(widths: list[int], width: int) -> list[list[int]]:
    """The columns in groups no wider than `width`, each starting with the first column (a group
    takes at least one more column, however wide)."""
    groups: list[list[int]] = [[0]]
    used = 1 + widths[0]
    for i in range(1, len(widths)):
        if used + widths[i] > width and len(groups[-1]) > 1:
            groups.append([0])
            used = 1 + widths[0]
        groups[-1].append(i)
        used += widths[i]
    return groups


def _columns(data: TableData, group: list[int]) -> TableData:
    return dataclasses.replace(
        data,
        keys=[data.keys[i] for i in group],
        values=[[row[i] for i in group] for row in data.values],
        cells=[[row[i] for i in group] for row in data.cells],
    )
