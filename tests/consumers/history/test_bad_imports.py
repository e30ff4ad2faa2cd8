"""The corpus of malformed `bench import` files: each must be refused with exactly its expected
message (exit 2), naming file and line, and leave the history without any of its runs.

Every `NN_description.jsonl` in `bad_imports/` has a sibling `.expected` with the whole stderr of
`bench import FILE` (`{file}` stands for the case's name, run from the corpus folder). The
`ok_*.jsonl` files are accepted: their `.expected` holds stdout. After an intended change:

    python tests/consumers/history/test_bad_imports.py --regenerate
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.consumers.history import rawrows

from caramel.consumers.history.layout import COUNTS

CORPUS = Path(__file__).resolve().parent / "bad_imports"


def cases(prefix: str = "") -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("*.jsonl") if p.stem.startswith("ok_") == (prefix == "ok_"))


def bench(*args: str, history: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, CARAMEL_HISTORY=str(history), CARAMEL_DATA_DIR=str(history.parent))
    return subprocess.run([sys.executable, "-m", "caramel", *args], capture_output=True, text=True, cwd=CORPUS,
                          env=env, timeout=60)


def test_corpus_is_complete() -> None:
    assert len(cases()) >= 20
    for stem in cases() + cases("ok_"):
        assert (CORPUS / f"{stem}.expected").exists(), stem


@pytest.mark.parametrize("case", cases())
def test_bad_import(case: str, tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    proc = bench("import", f"{case}.jsonl", history=history)
    assert "Traceback" not in proc.stderr
    assert proc.stderr == (CORPUS / f"{case}.expected").read_text()
    assert (proc.returncode, proc.stdout) == (2, "")
    listed = bench("history", "list", history=history)
    assert listed.returncode == 0 and listed.stdout == ""  # all or nothing: not even a good first line


@pytest.mark.parametrize("case", cases("ok_"))
def test_accepted_import(case: str, tmp_path: Path) -> None:
    proc = bench("import", f"{case}.jsonl", history=tmp_path / "history.db")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (CORPUS / f"{case}.expected").read_text()


def test_a_run_with_other_figures_than_the_history_is_refused(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    assert bench("import", "ok_01_empty_lines.jsonl", history=history).returncode == 0
    line = json.loads((CORPUS / "ok_01_empty_lines.jsonl").read_text().split("\n")[1])
    line["metrics"][0]["samples"] = [2.5]
    (tmp_path / "changed.jsonl").write_text(json.dumps(line) + "\n")
    proc = bench("import", str(tmp_path / "changed.jsonl"), history=history)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {tmp_path / 'changed.jsonl'}:1: run host:/runs/bench_run/000000:"
                                  "1700000000.000 is already in the history with other figures: summary/time")
    assert "hint: if this file is right, remove the run first: bench history remove host:" in proc.stderr
    key = line["run"]["run_key"]
    removed = bench("history", "remove", key, history=history)
    assert removed.returncode == 0 and removed.stdout.startswith(f"removed run {key} (1 figure(s))")
    assert bench("import", str(tmp_path / "changed.jsonl"), history=history).returncode == 0
    exported = bench("export", history=history)
    assert json.loads(exported.stdout)["metrics"][0]["samples"] == [2.5]


def test_remove_of_an_unknown_run_is_an_error(tmp_path: Path) -> None:
    proc = bench("history", "remove", "nosuch", history=tmp_path / "history.db")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: no run 'nosuch' in the history {tmp_path / 'history.db'}")


def test_a_non_finite_value_already_in_a_history_is_flagged_not_fatal(tmp_path: Path) -> None:
    """An older caramel stored `1e999` as infinity; export and list must still work, and say so."""
    history = tmp_path / "history.db"
    assert bench("import", "ok_01_empty_lines.jsonl", history=history).returncode == 0
    db = sqlite3.connect(history)
    with db:
        db.execute("UPDATE figures SET samples = '[inf,1.6]', mean = 'inf'")
        rawrows.add_metric_rows(db, db.execute("SELECT run_key, tbl, config, 'bad', unit, direction, 1, 0, 0, 0, 0, "
                                               "'[nan]' FROM metrics").fetchall())
        db.execute(f"UPDATE runs SET {COUNTS}")  # the counts every writer keeps (history/layout.py)
    db.close()
    exported = bench("export", history=history)
    assert exported.returncode == 0
    assert json.loads(exported.stdout)["metrics"] == [
        {"table": "summary", "row": {"nodes": "1"}, "name": "time", "unit": "s", "direction": "lower",
         "samples": [1.6]}]
    assert exported.stderr.count("warning: run host:/runs/bench_run/000000:1700000000.000: ") == 2
    assert "summary/bad holds a value that is not a finite number; left out" in exported.stderr
    listed = bench("history", "list", history=history)
    assert "1 figure(s)  (has values that are not finite numbers)" in listed.stdout


def test_the_dashboard_renders_a_history_holding_a_non_finite_value(tmp_path: Path) -> None:
    history_path = tmp_path / "history.db"
    assert bench("import", "ok_01_empty_lines.jsonl", history=history_path).returncode == 0
    db = sqlite3.connect(history_path)
    with db:
        rawrows.add_metric_rows(db, db.execute("SELECT run_key, tbl, config, 'bad', unit, direction, 1, 0, 0, 0, 0, "
                                               "'[1e999]' FROM metrics").fetchall())
    db.close()
    page = tmp_path / "dash.html"
    done = subprocess.run([sys.executable, "-m", "caramel", "dashboard", "--history", str(history_path),
                           "-o", str(page)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "<html" in page.read_text()


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        for stem in cases() + cases("ok_"):
            proc = bench("import", f"{stem}.jsonl", history=Path(scratch) / f"{stem}.db")
            (CORPUS / f"{stem}.expected").write_text(proc.stdout if stem.startswith("ok_") else proc.stderr)
            print(stem, (proc.stdout or proc.stderr).splitlines()[0])
