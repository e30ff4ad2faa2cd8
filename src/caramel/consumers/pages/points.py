"""Every figure behind a page's history plots, as one CSV file beside the page: what `bench
dashboard` writes when the page draws thinned series (pages.thinning), so no point is lost to the
reader. One line per figure, in the order recorded; the text of a run (its date, system, site) and
of a figure's key (metric, configuration) is made once, not once a line."""

from __future__ import annotations

import csv
import io
import time
from typing import IO

import numpy as np

from caramel.consumers.pages.sources import COPY, Collection

HEADER = ["benchmark", "system", "metric", "unit", "configuration", "run started (UTC)", "mean", "sd", "n",
          "regressed", "site", "run"]
LINES_AT_ONCE = 50_000


def _cells(*values: str) -> str:
    """Values as CSV cells, quoted where they hold a comma, a quote or a line break."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values)
    return out.getvalue()


def write_points(coll: Collection, handle: IO[str]) -> int:
    """Write every figure of `coll` (its columns: the history as read, the spreads of copies left
    out) as CSV to `handle`; returns the lines written."""
    c = coll.columns
    runs = [_cells(r.record.benchmark, r.label) for r in coll.runs]
    tails = [_cells(r.site, r.record.run_key) for r in coll.runs]
    days = [time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.record.started)) if r.record.started else ""
            for r in coll.runs]
    keys = []
    for (tbl, _config, name, unit, _direction), (label, row) in zip(c.keys, c.parsed, strict=True):
        aggregate = f" · {row[COPY]} of copies" if row.get(COPY) in ("sum", "mean") else ""
        keys.append(_cells(f"{tbl}/{name}{aggregate}", unit, label))
    regressed = coll.regressed if len(coll.regressed) == len(c.run) else [False] * len(c.run)
    handle.write(",".join(HEADER) + "\n")
    flags = ("", "yes")
    for low in range(0, len(c.run), LINES_AT_ONCE):
        part = slice(low, low + LINES_AT_ONCE)
        if low >= len(c.run):
            break
        handle.write("".join(
            f"{runs[r]},{keys[k]},{days[r]},{mean},{sd},{n},{flags[bad]},{tails[r]}\n"
            for r, k, mean, sd, n, bad in zip(c.run[part].tolist(), c.key[part].tolist(), _texts(c.mean[part]),
                                               _texts(c.sd[part]), _texts(c.n[part].astype(np.int64)),
                                               np.asarray(regressed[part], dtype=np.int8).tolist(), strict=True)))
    return len(c.run)


def _texts(values: np.ndarray) -> list[str]:
    """Each number as Python writes it (repr: the shortest text that reads back the same), made by
    one repr of the whole list: the loop runs in C, three times as fast as a repr per number."""
    return repr(values.tolist())[1:-1].split(", ") if len(values) else []
