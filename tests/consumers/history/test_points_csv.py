"""The CSV of every figure beside a thinned page (pages.points): the file the csv module's writer
writes row by row, texts that need quoting (commas, quotes, line breaks, non-ASCII) included, and
every mean and sd reading back to the double the history holds."""

from __future__ import annotations

import csv
import io
import math
import random
import time

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages import sources
from caramel.consumers.pages.points import HEADER, write_points

HOSTILE = ['a,b', 'say "hi"', "two\nlines", "é · ü", " padded ", ""]


def _history(path, rng: random.Random) -> str:
    with History.open(str(path)) as h:
        for i in range(6):
            h.add(
                RunRecord(f"run {HOSTILE[i]}", f"bench{HOSTILE[i]}", system=f"sys{HOSTILE[-i]}",
                          started=1.7e9 + 3600 * i if i else 0.0, site=HOSTILE[i - 1]),
                [Metric("t", {"Nodes": str(n), "Label": HOSTILE[n]}, f"m{HOSTILE[n]}", HOSTILE[n],
                        "higher", [rng.uniform(-1e300, 1e300) * 10.0 ** rng.randint(-300, 0)
                                   for _ in range(1 + n % 3)])
                 for n in range(5)],
            )
    return str(path)


def _expected(coll: sources.Collection) -> str:
    """Row by row through csv.writer, from the collection's columns (the file's definition)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    numbers = coll.numbers
    for i in range(len(numbers)):
        run = coll.runs[int(numbers["run"][i])]
        tbl, _config, name, unit, _direction = coll.keys[int(numbers["key"][i])]
        started = run.record.started
        writer.writerow([
            run.record.benchmark, run.label, f"{tbl}/{name}", unit, coll.parsed[int(numbers["key"][i])][0],
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)) if started else "",
            float(numbers["mean"][i]), float(numbers["sd"][i]), int(numbers["n"][i]),
            "yes" if len(coll.regressed) and coll.regressed[i] else "", run.site, run.record.run_key,
        ])
    return out.getvalue()


def test_the_csv_is_what_csv_writer_writes_and_every_double_reads_back(tmp_path):
    coll = sources.load([_history(tmp_path / "h.db", random.Random(35))])
    out = io.StringIO()
    assert write_points(coll, out) == len(coll.numbers) == 30
    assert out.getvalue() == _expected(coll)
    lines = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [float(line["mean"]) for line in lines] == coll.numbers["mean"].tolist()
    assert [float(line["sd"]) for line in lines] == coll.numbers["sd"].tolist()
    assert all(math.isfinite(float(line["mean"])) for line in lines)
    assert {line["run"] for line in lines} == {f"run {text}" for text in HOSTILE}


def test_an_empty_collection_writes_the_header_alone():
    out = io.StringIO()
    assert write_points(sources.Collection(["h.db"]), out) == 0
    assert out.getvalue() == ",".join(HEADER) + "\n"
