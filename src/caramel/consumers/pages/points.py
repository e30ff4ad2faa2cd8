"""Every figure behind a page's history plots, as one CSV file beside the page: what `bench
dashboard` writes when the page draws thinned series (pages.thinning), so no point is lost to the
reader. One line per figure, in the order recorded.

A million lines are written without a Python step per line: the text of a run (its benchmark and
system; its date; its site and key) and of a figure's key (metric, unit, configuration) is made
once, the numbers are written by orjson (ryu's shortest text that reads back the same double, a
tenth of the time of a repr per number), and each slice of lines is one `"".join` over a numpy
object array of those pieces, taken by the figures' run and key indices. Five times as fast as a
formatted string per line (docs/dashboard.md, Speed)."""

from __future__ import annotations

import csv
import io
import time
from typing import IO

import numpy as np
import orjson

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
LINES_AT_ONCE = 10_000  # (50,000 wrote no faster, and held more memory at once)


def _cells(*values: str) -> str:
    """Values as CSV cells, quoted where they hold a comma, a quote or a line break."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values)
    return out.getvalue()


def _texts(values: list[str]) -> np.ndarray:
    """Texts as a numpy object array, to be taken by index (no copy of the texts)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def write_points(coll: Collection, handle: IO[str]) -> int:
    """Write every figure of `coll` (its columns: the history as read, the spreads of copies left
    out) as CSV to `handle`; returns the lines written."""
    c = coll.columns
    # each line is six pieces: "benchmark,system," "metric,unit,configuration," "date," "mean,sd"
    # ",n,regressed," "site,run\n"; the run's and key's pieces made once
    heads = _texts([_cells(r.record.benchmark, r.label) + "," for r in coll.runs])
    days = _texts(
        [
            (
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.record.started))
                if r.record.started
                else ""
            )
            + ","
            for r in coll.runs
        ]
    )
    tails = _texts([_cells(r.site, r.record.run_key) + "\n" for r in coll.runs])
    keys = []
    for (tbl, _config, name, unit, _direction), (label, row) in zip(c.keys, c.parsed, strict=True):
        aggregate = f" · {row[COPY]} of copies" if row.get(COPY) in ("sum", "mean") else ""
        keys.append(_cells(f"{tbl}/{name}{aggregate}", unit, label) + ",")
    key_texts = _texts(keys)
    regressed = (
        coll.regressed if len(coll.regressed) == len(c.run) else np.zeros(len(c.run), dtype=bool)
    )
    handle.write(",".join(HEADER) + "\n")
    for low in range(0, len(c.run), LINES_AT_ONCE):
        part = slice(low, low + LINES_AT_ONCE)
        run = c.run[part]
        pieces = np.empty((len(run), 6), dtype=object)
        pieces[:, 0], pieces[:, 1], pieces[:, 2] = heads[run], key_texts[c.key[part]], days[run]
        pieces[:, 3] = _numbers(c.mean[part], c.sd[part])
        pieces[:, 4] = _counts(c.n[part], regressed[part])
        pieces[:, 5] = tails[run]
        handle.write("".join(pieces.ravel().tolist()))
    return len(c.run)


def _numbers(mean: np.ndarray, sd: np.ndarray) -> list[str]:
    """Each figure's "mean,sd": orjson writes a (figures, 2) array as `[[m,s],[m,s],...]`, split at
    the brackets. orjson writes a value that is not finite as null: those lines get Python's text."""
    pairs = np.ascontiguousarray(np.column_stack((mean, sd)), dtype=np.float64)
    if not len(pairs):
        return []
    out = orjson.dumps(pairs, option=orjson.OPT_SERIALIZE_NUMPY)[2:-2].decode("ascii").split("],[")
    for i in np.flatnonzero(~np.isfinite(pairs).all(axis=1)).tolist():
        out[i] = f"{float(pairs[i, 0])!r},{float(pairs[i, 1])!r}"
    return out


def _counts(n: np.ndarray, regressed: np.ndarray) -> np.ndarray:
    """Each figure's ",n,regressed,": the few distinct pairs made once, taken by index."""
    code = n.astype(np.int64) * 2 + np.asarray(regressed, dtype=np.int64)
    distinct, index = np.unique(code, return_inverse=True)
    return _texts([f",{c // 2},{'yes' if c % 2 else ''}," for c in distinct.tolist()])[
        index.reshape(-1)
    ]
