"""The analysis cache holds JSON, never code: a pickle, garbage or a cache of another layout is a
miss (the values are analysed again), never an error, and nothing in it is run."""

from __future__ import annotations

import os
import pickle
import sqlite3
from pathlib import Path

from caramel.stages.analyse import analyse_all
from caramel.stages.analyse.cache import SCHEMA_VERSION

BENCH = """
<jube><benchmark name="c" outpath="run">
  <parameterset name="p"><parameter name="n" type="int">1,2</parameter></parameterset>
  <patternset name="t"><pattern name="t" type="float">time $jube_pat_fp</pattern>
    <pattern name="twice" type="float" mode="python">$t * 2</pattern></patternset>
  <step name="s"><use>p</use><do>true</do></step>
  <analyser name="a"><use>t</use><analyse step="s"><file>out.log</file></analyse></analyser>
</benchmark></jube>
"""


class Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _analysed(ws):
    plan = ws.plan(BENCH)
    for wp in plan.workpackages:
        ws.write(plan, wp.id, "out.log", f"time {wp.id + 1}.5\n")
    inp = ws.input(plan, cache=True)
    first = analyse_all(inp)["a"]
    assert first.scanned == 2
    return inp, first


def test_cached_values_read_back_as_they_were_computed(ws) -> None:
    inp, first = _analysed(ws)
    again = analyse_all(inp)["a"]
    assert again.scanned == 0 and again.reused == 2
    assert {r: g.values for r, g in again.groups.items()} == {r: g.values for r, g in first.groups.items()}
    assert isinstance(again.groups[1].values["t_cnt"], int) and again.groups[1].values["twice"] == 5.0


def test_a_pickle_or_garbage_in_the_cache_is_a_miss_and_never_runs(ws, tmp_path: Path) -> None:
    inp, first = _analysed(ws)
    marker = tmp_path / "unpickled"
    db = sqlite3.connect(inp.cache_path)
    db.execute("UPDATE analysis SET data=? WHERE root=0", (pickle.dumps(Evil(str(marker))),))
    db.execute("UPDATE analysis SET data=? WHERE root=1", ("[1, 2, {\"not\": \"a group\"",))
    db.execute("UPDATE tables SET data=?", (pickle.dumps(Evil(str(marker))),))
    db.commit()
    db.close()
    again = analyse_all(inp)["a"]
    assert again.scanned == 2 and again.reused == 0  # both analysed again
    assert {r: g.values for r, g in again.groups.items()} == {r: g.values for r, g in first.groups.items()}
    assert not marker.exists()


def test_a_cache_of_another_schema_version_is_a_miss(ws) -> None:
    inp, _first = _analysed(ws)
    db = sqlite3.connect(inp.cache_path)
    db.execute("UPDATE meta SET value=? WHERE key='schema'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    again = analyse_all(inp)["a"]
    assert again.scanned == 2
    assert analyse_all(inp)["a"].scanned == 0  # made again in this layout


def test_a_cache_file_of_garbage_is_a_miss(ws) -> None:
    inp, _first = _analysed(ws)
    for name in (inp.cache_path + "-wal", inp.cache_path + "-shm"):
        if os.path.exists(name):
            os.unlink(name)
    Path(inp.cache_path).write_bytes(b"\x80\x04not a database at all" * 100)
    assert analyse_all(inp)["a"].scanned == 2


def test_a_linked_analysis_cache_is_not_used_so_it_never_writes_the_file_it_points_at(tmp_path: Path) -> None:
    """A run folder someone else made may link analyse.db to the reader's history (an SQLite file with
    a `meta` table the cache would write its schema into)."""
    from caramel.stages.analyse.cache import AnalysisCache

    history = tmp_path / "history.db"
    db = sqlite3.connect(history)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.commit()
    db.close()
    before = history.read_bytes()
    run = tmp_path / "run"
    run.mkdir()
    (run / "analyse.db").symlink_to(history)
    cache = AnalysisCache(str(run / "analyse.db"))
    assert cache.db is None
    cache.close()
    assert history.read_bytes() == before
