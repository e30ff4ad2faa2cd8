"""`bench dashboard` on bad input (exit 2, a message naming the file, no page), its filters, and
`bench export`/`bench import` carrying each run's site and fingerprint."""

from __future__ import annotations

import json
import sqlite3

import pytest
from tests.run_bench import bench

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord

from .conftest import bench_env


def _dashboard(tmp_path, *args: str):
    out = tmp_path / "page.html"
    done = bench("dashboard", *args, "-o", str(out), cwd=tmp_path, env=bench_env(tmp_path, tmp_path / "default.db"))
    return done, out


def _one_run(path, benchmark="llm", system="A100", site="") -> None:
    with History.open(str(path)) as h:
        h.add(RunRecord("k-" + benchmark + system, benchmark, system=system, started=1.0, site=site,
                        fingerprint={"cpu_model": "EPYC", "cpu_count": 128}),
              [Metric("t", {"n": "1"}, "rate", "", "higher", [1.0])])


def _sqlite(path, script: str) -> None:
    db = sqlite3.connect(path)
    db.executescript(script)
    db.close()


@pytest.mark.parametrize("make, expected", [
    (lambda p: History.open(str(p)).db.close(), "no runs in {p}: the history is empty"),
    (lambda p: p.write_bytes(b""), "{p}: an empty file, not a caramel history"),
    (lambda p: p.write_text('{"run": {}}\n'), "{p}: not a caramel history (not an SQLite database)"),
    (lambda p: _sqlite(p, "CREATE TABLE foo (x);"), "{p}: an SQLite database, but not a caramel history"),
    (lambda p: (History.open(str(p)).db.close(), _sqlite(p, "UPDATE meta SET value='99' WHERE key='schema';")),
     "{p}: a history of a newer caramel (layout 99"),
    (lambda p: _sqlite(p, "CREATE TABLE runs (run_key, benchmark); CREATE TABLE metrics (run_key);"),
     "{p}: a history of another caramel version (missing columns"),
])
def test_bad_history_is_a_clear_error_and_no_page(tmp_path, make, expected):
    path = tmp_path / "h.db"
    make(path)
    done, out = _dashboard(tmp_path, "--history", str(path))
    assert done.returncode == 2 and expected.format(p=path) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


@pytest.mark.slow
def test_missing_and_locked_history(tmp_path):
    done, out = _dashboard(tmp_path, "--history", str(tmp_path / "nope.db"))
    assert done.returncode == 2 and "nope.db: no such history file" in done.stderr and not out.exists()
    path = tmp_path / "h.db"
    _one_run(path)
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done, out = _dashboard(tmp_path, "--history", str(path))
    finally:
        holder.rollback()
        holder.close()
    assert done.returncode == 2 and "the history is locked by another process" in done.stderr and not out.exists()


@pytest.mark.slow
def test_filters_and_default_history(tmp_path):
    _one_run(tmp_path / "default.db", "llm", "A100")
    _one_run(tmp_path / "default.db", "resnet", "MI250")
    done, out = _dashboard(tmp_path)  # $CARAMEL_HISTORY
    assert done.returncode == 0 and "dashboard of 2 run(s)" in done.stderr and out.exists()
    done, out = _dashboard(tmp_path, "--benchmark", "resnet")
    assert done.returncode == 0 and "dashboard of 1 run(s)" in done.stderr
    assert 'value="resnet"' in out.read_text() and 'value="llm"' not in out.read_text()
    done, _ = _dashboard(tmp_path, "--benchmark", "bert")
    assert done.returncode == 2 and "no runs of benchmark 'bert'" in done.stderr and "llm, resnet" in done.stderr
    done, _ = _dashboard(tmp_path, "--benchmark", "llm", "--system", "MI250")
    assert done.returncode == 2 and "no runs of benchmark 'llm' on system 'MI250'" in done.stderr


def test_export_carries_site_and_fingerprint_and_import_keeps_them(tmp_path):
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    _one_run(source, site="juwels")
    env = bench_env(tmp_path, source)
    export = tmp_path / "e.jsonl"
    assert bench("export", "-o", str(export), cwd=tmp_path, env=env).returncode == 0
    record = json.loads(export.read_text())
    assert record["site"] == "juwels" and record["fingerprint"] == {"cpu_model": "EPYC", "cpu_count": 128}
    assert "site" not in record["run"]  # beside "run", so older caramels still read the export
    assert bench("import", str(export), "--history", str(target), cwd=tmp_path, env=env).returncode == 0
    with History.open(str(target)) as h:
        run = h.run("k-llmA100")
    assert run.site == "juwels" and run.fingerprint["cpu_count"] == 128
    renamed = bench("export", "--site", "lab", cwd=tmp_path, env=env)  # recorded on this host: renamed
    assert json.loads(renamed.stdout)["site"] == "lab"


def test_a_page_that_fails_while_it_is_written_leaves_no_page_and_keeps_the_old_one(
    tmp_path, monkeypatch
):
    """The page is written as the template renders it (render.page_parts); a failure part way
    leaves the page that was there, never half a page."""
    from caramel.cli import dashboard
    from caramel.consumers.pages import render
    from caramel.fs.oserrors import FileError

    history = tmp_path / "h.db"
    _one_run(history)
    out = tmp_path / "page.html"
    out.write_text("the page before\n")

    def failing(*args, **kwargs):
        yield "<!doctype html>"
        raise OSError("the disk went away")

    monkeypatch.setattr(render, "page_parts", failing)
    options = dashboard.DashboardOptions(output=str(out), history=(str(history),))
    with pytest.raises(FileError, match="cannot write .*page.html: the disk went away"):
        dashboard.dashboard(options)
    assert out.read_text() == "the page before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db", "page.html"]
