"""JUBE's `result --select/--exclude`: a table cut to some of its columns.

As JUBE 2.7 (jube/result_types/genericresult.py, `create_result_data`): a column is kept when its
name (the parameter or pattern it shows, not its title) is selected (every column when nothing
is) and not excluded; the table's own column order stays; a name no column has is a warning,
not an error; a name both selected and excluded is an error.
"""

from __future__ import annotations

import dataclasses

from caramel.errors import did_you_mean
from caramel.stages.analyse.inputs import AnalyseError
from caramel.stages.report.table import TableData


def select_columns(
    data: TableData, select: list[str] | None, exclude: list[str] | None
) -> tuple[TableData, list[str]]:
    """`data` with only the chosen columns, and a warning for each name no column has."""
    both = sorted(set(select or ()) & set(exclude or ()))
    if both:
        raise AnalyseError(
            f"{', '.join(both)} both selected and excluded",
            hint="name a column in --select or in --exclude, not in both",
        )
    names = [key.name for key in data.keys]
    warnings = [
        f"table '{data.name}' has no column '{name}'; ignored"
        + (f" ({did_you_mean(name, names)})" if did_you_mean(name, names) else "")
        for name in dict.fromkeys([*(select or ()), *(exclude or ())])
        if name not in names
    ]
    kept = [
        place
        for place, name in enumerate(names)
        if (select is None or name in select) and name not in (exclude or ())
    ]
    cut = dataclasses.replace(
        data,
        keys=[data.keys[place] for place in kept],
        values=[[row[place] for place in kept] for row in data.values],
        cells=[[row[place] for place in kept] for row in data.cells],
        config_columns=[name for name in data.config_columns if name in {names[p] for p in kept}],
    )
    return cut, warnings
