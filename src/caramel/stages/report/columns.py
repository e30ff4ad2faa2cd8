"""JUBE's `result --select/--exclude`: a table cut to some of its columns.

As JUBE 2.7 (jube/result_types/genericresult.py, `create_result_data`): a column is kept when its
name (the parameter or pattern it shows, not its title) is selected (every column when nothing
is) and not excluded; the table's own column order stays; a name no column has is a warning,
not an error; a name both selected and excluded is an error.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from caramel.errors import did_you_mean
from caramel.stages.analyse.inputs import AnalyseError
from caramel.stages.report.table import TableData

T = TypeVar("T")


def select_columns(
    data: TableData, select: list[str] | None, exclude: list[str] | None
) -> tuple[TableData, list[str]]:
    """`data` with only the chosen columns, and a warning for each name no column has."""
    selected, excluded = select or [], exclude or []
    _refuse_both(selected, excluded)
    names = [key.name for key in data.keys]
    warnings = _unknown(data.name, [*selected, *excluded], names)
    kept = [place for place, name in enumerate(names) if _chosen(name, select, excluded)]
    return _cut(data, kept), warnings


def _refuse_both(select: list[str], exclude: list[str]) -> None:
    both = sorted(set(select) & set(exclude))
    if both:
        raise AnalyseError(
            f"{', '.join(both)} both selected and excluded",
            hint="name a column in --select or in --exclude, not in both",
        )


def _unknown(table: str, asked: list[str], names: list[str]) -> list[str]:
    """A warning for each name asked for that no column of the table has, once each."""
    return [_no_column(table, name, names) for name in dict.fromkeys(asked) if name not in names]


def _no_column(table: str, name: str, names: list[str]) -> str:
    near = did_you_mean(name, names)  # the nearest names
    return f"table '{table}' has no column '{name}'; ignored" + (f" ({near})" if near else "")


def _chosen(name: str, select: list[str] | None, exclude: list[str]) -> bool:
    return (select is None or name in select) and name not in exclude


def _cut(data: TableData, kept: list[int]) -> TableData:
    """The table with only the columns at the places `kept`, in their order."""
    names = {data.keys[place].name for place in kept}
    return dataclasses.replace(
        data,
        keys=_picked(data.keys, kept),
        values=[_picked(row, kept) for row in data.values],
        cells=[_picked(row, kept) for row in data.cells],
        config_columns=[name for name in data.config_columns if name in names],
    )


def _picked(items: list[T], places: list[int]) -> list[T]:
    return [items[place] for place in places]
