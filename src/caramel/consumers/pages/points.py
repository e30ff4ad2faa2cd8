"""Every figure behind a page's history plots, as one CSV file beside the page: what `bench
dashboard` writes when the page draws thinned series (pages.thinning), so no point is lost to the
reader. One line per figure, in the order recorded.

A big history's file holds a million lines that differ only in their numbers: the texts a line takes
from its run (benchmark, system, start, site, run key) and from its figure key (metric, unit,
configuration) are written by the csv module once per run and once per key, and each line joins
them with its numbers as csv.writer writes numbers (`repr`: every double reads back the same), a
chunk of lines at a time. The file is the one csv.writer would write row by row, in under half
the time of DataFrame.to_csv (which turns every number into a numpy string first)."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

import numpy as np

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
# lines made at once: their Python strings (some 300 KB) are what writing holds, and memory the
# allocator reuses chunk after chunk; a chunk of 20,000 lines (3 MB) took fresh pages from the
# system each time (40,000 page faults for a million lines, a sixth of the file's CPU time)
CHUNK_LINES = 2_000


def _csv_fields(fields: Iterable[str]) -> str:
    """`fields` as the csv module writes them in a row (quoted where they need it), no line end."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(fields)
    return buffer.getvalue()[:-1]


def write_points(coll: Collection, handle: IO[str]) -> int:
    """Write every figure of `coll` (its columns: the history as read, the spreads of copies left
    out) as CSV to `handle`; returns the lines written."""
    handle.write(_csv_fields(HEADER) + "\n")
    if not coll.runs or not len(coll.numbers):
        return 0
    texts = _LineTexts.of(coll)
    columns = _line_numbers(coll)
    for first in range(0, len(coll.numbers), CHUNK_LINES):
        handle.write(_lines(texts, columns, first))
    return len(coll.numbers)


@dataclass
class _LineTexts:
    """The texts of a line (HEADER's order: run texts, key texts, run start, the numbers,
    regressed, run texts) that come from its run or its figure key, each quoted by the csv module
    once, with the commas between them."""

    before: list[str]  # per run: benchmark, system label
    keys: list[str]  # per key: metric, unit, configuration
    started: list[str]  # per run: its start
    after: list[str]  # per run: site, run key and the line's end

    @classmethod
    def of(cls, coll: Collection) -> _LineTexts:
        return cls(
            [_csv_fields([r.record.benchmark, r.label]) + "," for r in coll.runs],
            [
                _csv_fields([_metric(tbl, name, row), unit, label, ""])
                for (tbl, _config, name, unit, _direction), (label, row) in zip(
                    coll.keys, coll.parsed, strict=True
                )
            ],
            # after an empty field: a row of one empty field would be written `""`
            [_csv_fields(["", _day(r.record.started)])[1:] + "," for r in coll.runs],
            [_csv_fields(["", r.site, r.record.run_key]) + "\n" for r in coll.runs],
        )


def _line_numbers(coll: Collection) -> tuple[np.ndarray, ...]:
    """The columns a line takes its numbers from: run, key, mean, sd, n and whether it regressed
    (none judged: none regressed)."""
    numbers = coll.numbers
    regressed = (
        coll.regressed
        if len(coll.regressed) == len(numbers)
        else np.zeros(len(numbers), dtype=bool)
    )
    return (
        numbers["run"].to_numpy(),
        numbers["key"].to_numpy(),
        numbers["mean"].to_numpy(float),
        numbers["sd"].to_numpy(float),
        numbers["n"].to_numpy().astype(np.int64),
        regressed.astype(np.int64),
    )


_FLAGS = ("", "yes")  # the regressed field


def _lines(texts: _LineTexts, columns: tuple[np.ndarray, ...], first: int) -> str:
    """The lines of the CHUNK_LINES figures from `first` on, each number as csv.writer writes it
    (`repr`)."""
    chunk = (column[first : first + CHUNK_LINES].tolist() for column in columns)
    before, keys, started, after = texts.before, texts.keys, texts.started, texts.after
    return "".join(
        [
            f"{before[r]}{keys[k]}{started[r]}{mean!r},{sd!r},{n},{_FLAGS[bad]}{after[r]}"
            for r, k, mean, sd, n, bad in zip(*chunk, strict=True)
        ]
    )


def _day(started: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)) if started else ""


def _metric(table: str, name: str, row: dict[str, str]) -> str:
    """The metric as the CSV names it: `table/name`, `· sum of copies` for a copies aggregate."""
    copy = row.get(COPY)
    return f"{table}/{name}" + (f" · {copy} of copies" if copy in ("sum", "mean") else "")
