"""Every figure behind a page's history plots, as one CSV file beside the page: what `bench
dashboard` writes when the page draws thinned series (pages.thinning), so no point is lost to the
reader. One line per figure, in the order recorded, written by `DataFrame.to_csv`: the run's texts
and the figure key's texts are categories taken by the figures' run and key indices."""

from __future__ import annotations

import time
from typing import IO

import numpy as np
import pandas as pd

from caramel.consumers.pages.sources import COPY, Collection

HEADER = [
    "benchmark",
    "system",
    "metric",
    "unit",
    "configuration",
    "run started (UTC)",
    "mean",
    "sd",
    "n",
    "regressed",
    "site",
    "run",
]


def _taken(texts: list[str], index: np.ndarray) -> pd.Categorical:
    """`texts[i]` for each i of `index`, as a categorical (no copy of a text per figure). A text
    may recur (two runs of one benchmark): the categories are the distinct texts."""
    categories, codes = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    return pd.Categorical.from_codes(codes.reshape(-1)[index], categories=categories)


def write_points(coll: Collection, handle: IO[str]) -> int:
    """Write every figure of `coll` (its columns: the history as read, the spreads of copies left
    out) as CSV to `handle`; returns the lines written."""
    numbers, runs = coll.numbers, coll.runs
    if not runs:  # no figures either
        pd.DataFrame(columns=HEADER).to_csv(handle, index=False, lineterminator="\n")
        return 0
    started = [
        time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.record.started))
        if r.record.started
        else ""
        for r in runs
    ]
    metrics = [
        f"{tbl}/{name}" + (f" · {row[COPY]} of copies" if row.get(COPY) in ("sum", "mean") else "")
        for (tbl, _config, name, _unit, _direction), (_label, row) in zip(
            coll.keys, coll.parsed, strict=True
        )
    ]
    regressed = (
        coll.regressed
        if len(coll.regressed) == len(numbers)
        else np.zeros(len(numbers), dtype=bool)
    )
    run, key = numbers["run"].to_numpy(), numbers["key"].to_numpy()
    table = pd.DataFrame(
        {
            "benchmark": _taken([r.record.benchmark for r in runs], run),
            "system": _taken([r.label for r in runs], run),
            "metric": _taken(metrics, key),
            "unit": _taken([k[3] for k in coll.keys], key),
            "configuration": _taken([label for label, _row in coll.parsed], key),
            "run started (UTC)": _taken(started, run),
            "mean": numbers["mean"].to_numpy(),
            "sd": numbers["sd"].to_numpy(),
            "n": numbers["n"].to_numpy().astype(np.int64),
            "regressed": np.where(regressed, "yes", ""),
            "site": _taken([r.site for r in runs], run),
            "run": _taken([r.record.run_key for r in runs], run),
        }
    )
    table.to_csv(handle, index=False, lineterminator="\n")
    return len(table)
