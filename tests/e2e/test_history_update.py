"""`bench result` after one log changed updates only that workpackage's figures in the history."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.run_bench import bench

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

BENCH = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="h" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2,3</parameter></parameterset>
    <patternset name="t"><pattern name="time" type="float" unit="s">time $jube_pat_fp</pattern>
      <pattern name="rate" type="float" mode="python" direction="higher">$n / $time_avg</pattern></patternset>
    <step name="s"><use>p</use><do>echo time $n.5</do></step>
    <analyser name="a"><use>t</use><analyse step="s"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="r" style="csv"><column>n</column><column>time_avg</column>
      <column>rate</column></table></result>
  </benchmark>
</jube>
"""


def figures(history: Path) -> dict[tuple, tuple]:
    db = sqlite3.connect(history)
    try:
        # the figures table's rowid: a figure not written again keeps it (layout 4: docs/history.md)
        return {(tbl, config, name): (rowid, samples) for rowid, tbl, config, name, samples in
                db.execute("SELECT figures.rowid, tbl, config, name, samples FROM figures "
                           "JOIN series ON series.id = figures.series")}
    finally:
        db.close()


def test_one_log_changed_changes_only_its_figures(tmp_path: Path, env: dict[str, str]) -> None:
    history = tmp_path / "history.db"
    (tmp_path / "h.xml").write_text(BENCH)
    assert bench("run", "h.xml", cwd=tmp_path, env=env).returncode == 0
    proc = bench("result", "runs", "--history", str(history), "--no-files", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    before = figures(history)
    assert len(before) == 6  # time and rate of three workpackages
    db = sqlite3.connect(history)  # note every figure written from now on
    db.executescript("CREATE TABLE written (name TEXT); CREATE TRIGGER note AFTER INSERT ON figures "
                     "BEGIN INSERT INTO written SELECT config || ' ' || name FROM series WHERE id = NEW.series; "
                     "END;")
    db.close()
    with open(tmp_path / "runs" / "000000" / "000001_s" / "work" / "stdout", "a") as handle:
        handle.write("time 4.5\n")
    proc = bench("result", "runs", "--history", str(history), "--no-files", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    after = figures(history)
    assert after.keys() == before.keys()
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {("r", '{"n": "2"}', "time_avg"), ("r", '{"n": "2"}', "rate")}
    assert after[("r", '{"n": "2"}', "time_avg")][1] == "[3.5]"
    db = sqlite3.connect(history)
    written = sorted(name for (name,) in db.execute("SELECT name FROM written"))
    db.close()
    assert written == ['{"n": "2"} rate', '{"n": "2"} time_avg']  # the others were not written again


def contents(history: Path) -> set[tuple]:
    db = sqlite3.connect(history)
    try:
        return set(db.execute("SELECT tbl, config, name, unit, direction, n, mean, sd, min, max, samples FROM metrics"))
    finally:
        db.close()


def test_history_after_changes_equals_a_fresh_one(tmp_path: Path, env: dict[str, str]) -> None:
    history = tmp_path / "history.db"
    (tmp_path / "h.xml").write_text(BENCH.replace("1,2,3", ",".join(str(i) for i in range(1, 31))))
    assert bench("run", "h.xml", cwd=tmp_path, env=env).returncode == 0
    args = ["result", "runs", "--no-files", "--history"]
    for wp in (0, 7, 7, 29, 13):
        with open(tmp_path / "runs" / "000000" / f"{wp:06d}_s" / "work" / "stdout", "a") as handle:
            handle.write(f"time {wp + 0.25}\n")
        proc = bench(*args, str(history), cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        fresh = tmp_path / f"fresh{wp}.db"
        full = bench(*args, str(fresh), "--reanalyse", cwd=tmp_path, env=env)
        assert full.stdout == proc.stdout
        assert contents(history) == contents(fresh)


def test_adding_the_run_again_keeps_what_was_probed_here(tmp_path: Path, env: dict[str, str]) -> None:
    """A local run's fingerprint and the benchmark's git commit are probed on this host when the
    run is first added (consumers/history/provenance.py, run_record); a later `bench result` that
    adds the run again (a log changed) keeps them: the run ran then, not on the host of today."""
    history = tmp_path / "history.db"
    (tmp_path / "h.xml").write_text(BENCH)
    assert bench("run", "h.xml", cwd=tmp_path, env=env).returncode == 0
    args = ["result", "runs", "--history", str(history), "--no-files"]
    assert bench(*args, cwd=tmp_path, env=env).returncode == 0
    db = sqlite3.connect(history)
    ((probed,),) = db.execute("SELECT fingerprint FROM runs").fetchall()
    assert '"detected_on"' in probed and "(local run)" in probed  # probed here the first time
    kept = '{"cpu_model": "the host of the run", "detected_on": "h (local run)"}'
    with db:
        db.execute("UPDATE runs SET fingerprint = ?, git_commit = 'abc1234'", (kept,))
    db.close()
    with open(tmp_path / "runs" / "000000" / "000001_s" / "work" / "stdout", "a") as handle:
        handle.write("time 4.5\n")
    proc = bench(*args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(history)
    rows = db.execute("SELECT fingerprint, git_commit FROM runs").fetchall()
    samples = db.execute("SELECT samples FROM figures JOIN series ON series.id = figures.series "
                         "WHERE name = 'time_avg' AND config = '{\"n\": \"2\"}'").fetchall()
    db.close()
    assert rows == [(kept, "abc1234")] and samples == [("[3.5]",)]  # kept; the figure updated
