"""The history's integrity against concurrent writers, newer exports and oversized rows.

Two `bench import`s of one run key with other figures, started together: before, each checked the
history (run not there), then both inserted with INSERT OR IGNORE, so both exited 0 and one set of
figures was dropped silently. The check and the insert are now one write transaction (BEGIN
IMMEDIATE): the second waits for the first and is refused naming the key. The race is made certain,
not likely, by slowing the check in both processes (a real `bench import` each, the check wrapped).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from caramel.consumers.history.store import EXPORT_SCHEMA, History, RunRecord
from caramel.errors import RunError

from . import rawrows

# `bench import` with History.run (the "is the run there?" check) slowed by 1.5 s once it has answered
SLOW_CHECK = """
import runpy, sys, time
from caramel.consumers.history import store
_run = store.History.run
def slow(self, key):
    found = _run(self, key)
    time.sleep(1.5)
    return found
store.History.run = slow
sys.argv = ["bench", *sys.argv[1:]]
runpy.run_module("caramel", run_name="__main__")
"""


def _export(path: Path, samples: list[float], schema: int | None = None) -> Path:
    line = {"run": {"run_key": "site-a/run-7", "benchmark": "gemm"},
            "metrics": [{"table": "t", "row": {"n": 1}, "name": "rate", "unit": "GF/s", "direction": "higher",
                         "samples": samples}]}
    if schema is not None:
        line = {"schema": schema, **line}
    path.write_text(json.dumps(line) + "\n")
    return path


def _env(history: Path) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[3] / "src")
    return dict(os.environ, CARAMEL_HISTORY=str(history), CARAMEL_DATA_DIR=str(history.parent),
                PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))


@pytest.mark.slow
def test_two_concurrent_imports_of_one_key_never_both_succeed(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    History(str(history)).db.close()  # made before, so neither process creates the file
    files = [_export(tmp_path / "a.jsonl", [10.0, 11.0]), _export(tmp_path / "b.jsonl", [20.0, 21.0])]
    procs = [subprocess.Popen([sys.executable, "-c", SLOW_CHECK, "import", str(f)], env=_env(history),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in files]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    codes = sorted(code for code, _out, _err in results)
    assert codes == [0, 2], results
    refused = next(err for code, _out, err in results if code == 2)
    assert "run site-a/run-7 is already in the history with other figures" in refused
    assert "Traceback" not in refused
    with sqlite3.connect(history) as db:
        stored = db.execute("SELECT samples FROM metrics WHERE run_key='site-a/run-7'").fetchall()
    winner = next(f for f, (code, _o, _e) in zip(files, results, strict=True) if code == 0)
    assert [json.loads(s) for (s,) in stored] == [json.loads(winner.read_text())["metrics"][0]["samples"]]


def _import(path: Path, history: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caramel", "import", str(path)], env=_env(history),
                          capture_output=True, text=True, timeout=60)


def test_an_export_of_a_newer_caramel_is_refused_as_such(tmp_path: Path) -> None:
    newer = _export(tmp_path / "newer.jsonl", [1.0], schema=EXPORT_SCHEMA + 1)
    proc = _import(newer, tmp_path / "history.db")
    assert proc.returncode == 2
    assert f"made by a newer caramel (schema {EXPORT_SCHEMA + 1}): upgrade" in proc.stderr
    assert "not a bench export" not in proc.stderr


def test_a_newer_export_with_keys_this_caramel_does_not_know_is_refused_for_its_schema(tmp_path: Path) -> None:
    line = json.loads(_export(tmp_path / "x.jsonl", [1.0], schema=99).read_text())
    line["metrics"][0]["energy"] = 3.0
    (tmp_path / "x.jsonl").write_text(json.dumps(line) + "\n")
    proc = _import(tmp_path / "x.jsonl", tmp_path / "history.db")
    assert "made by a newer caramel (schema 99): upgrade" in proc.stderr


@pytest.mark.parametrize("schema", [None, 1, EXPORT_SCHEMA])
def test_older_and_current_exports_still_import(tmp_path: Path, schema: int | None) -> None:
    proc = _import(_export(tmp_path / "old.jsonl", [1.0, 2.0], schema=schema), tmp_path / "history.db")
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert "1 new run(s), 1 new figure(s)" in proc.stdout


@pytest.mark.parametrize("schema", ["2", True, 0, -1, 2.5])
def test_a_schema_that_is_no_whole_number_is_refused(tmp_path: Path, schema) -> None:
    line = {"schema": schema, **json.loads(_export(tmp_path / "x.jsonl", [1.0]).read_text())}
    (tmp_path / "x.jsonl").write_text(json.dumps(line) + "\n")
    proc = _import(tmp_path / "x.jsonl", tmp_path / "history.db")
    assert proc.returncode == 2 and "not a bench export: schema holds" in proc.stderr


def test_export_writes_its_schema_and_reimports(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    assert _import(_export(tmp_path / "a.jsonl", [1.0]), history).returncode == 0
    out = subprocess.run([sys.executable, "-m", "caramel", "export"], env=_env(history), capture_output=True,
                         text=True, timeout=60)
    line = json.loads(out.stdout)
    assert line["schema"] == 2  # no figure holds a reason (issue 37): the schema older caramels read
    (tmp_path / "again.jsonl").write_text(out.stdout)
    again = _import(tmp_path / "again.jsonl", tmp_path / "other.db")
    assert again.returncode == 0, again.stderr


def test_an_export_line_of_endless_nesting_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "deep.jsonl").write_text('{"run": ' + "[" * 200_000 + "\n")
    proc = _import(tmp_path / "deep.jsonl", tmp_path / "history.db")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "deep.jsonl:1: not a bench export" in proc.stderr


def test_a_history_row_nested_too_deeply_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    with History(str(path)) as history:
        history.add(RunRecord("k", "b"), [])
        with history.db:
            history.db.execute("UPDATE runs SET tags=?", ("[" * 5000 + "]" * 5000,))
        with pytest.raises(RunError, match=f"{path}: run k: tags: JSON nested more than"):
            history.run("k")
        with history.db:
            history.db.execute("UPDATE runs SET tags=?", ('{"a": 1}',))
        with pytest.raises(RunError, match="run k: tags is damaged"):
            history.run("k")


def test_a_stored_sample_that_no_float_can_hold_is_left_out_not_an_internal_error(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    with History(str(path)) as history:
        history.add(RunRecord("k", "b"), [])
        with history.db:
            rawrows.add_metric_rows(history.db, [("k", "t", "{}", "rate", "", "higher", 2, 1, 0, 1, 1,
                                                  "[1.5, " + "9" * 400 + ", true]")])
        (metric,) = history.metrics("k")
        assert metric.samples == [1.5]
        assert history.skipped == ["run k: t/rate holds a value that is not a finite number; that sample is left out"]
