"""Every value the import schema accepts is stored or refused naming the line (issue 36), a copy
names the run and field it cannot copy and goes on, a bad port names its setting, and
`bench export --site` leaves imported runs their site. SQLite histories only."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run_bench import isolated_env

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord

LINE = {"schema": 2, "run": {"run_key": "h:/r/0:1", "benchmark": "b", "host": "h", "started": 1.0},
        "metrics": [{"table": "t", "name": "time", "row": {"n": "1"}, "samples": [1.0, 2.0]}]}


def bench(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caramel", *args], capture_output=True, text=True, cwd=cwd,
                          env=isolated_env(cwd, **env), timeout=120)


def line(**run: object) -> dict:
    doc = json.loads(json.dumps(LINE))
    doc["run"].update(run)
    return doc


@pytest.mark.parametrize(("text", "problem"), [
    (json.dumps(line(started=10**30)),
     "run.started holds the number 10000000000000000000..., beyond a 64-bit integer (seconds since 1970)"),
    (json.dumps(line(benchmark="b\ud800")),
     "run.benchmark holds a lone surrogate (U+D800), which is no character and cannot be stored"),
    (json.dumps(line(benchmark="a\0b")),
     "run.benchmark holds a NUL character (U+0000), which a history cannot store"),
    (json.dumps(line(fingerprint={"cpu\0": "x"})),
     "run.fingerprint key holds a NUL character (U+0000), which a history cannot store"),
], ids=["huge-integer", "lone-surrogate", "nul", "nul-in-a-key"])
def test_values_no_engine_stores_are_refused_naming_the_line(tmp_path: Path, text: str, problem: str) -> None:
    """docs/history.md, "bench export, bench import": a malformed line is an error naming the file,
    line and JSON path, exit 2, and nothing of the file is imported (a lone surrogate is named
    there as handled); before, these were tracebacks or a NUL that blocked `history copy`."""
    (tmp_path / "in.jsonl").write_text(json.dumps(LINE).replace("h:/r/0:1", "h:/r/9:1") + "\n" + text + "\n")
    proc = bench("import", "in.jsonl", "--history", "h.db", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines()[0] == f"error: in.jsonl:2: not a bench export: {problem}"
    assert bench("history", "list", "--history", "h.db", cwd=tmp_path).stdout == ""


def test_samples_near_the_double_limit_are_stored_with_a_finite_mean(tmp_path: Path) -> None:
    """docs/history.md, "bench export, bench import": `samples` is a non-empty list of finite
    numbers, so [1.7e308, 1.7e308] is accepted and stored (its mean is 1.7e308; the sum overflowed
    math.fsum before, a traceback) and exported again as it came."""
    doc = json.loads(json.dumps(LINE))
    doc["metrics"][0]["samples"] = [1.7e308, 1.7e308]
    (tmp_path / "in.jsonl").write_text(json.dumps(doc) + "\n")
    proc = bench("import", "in.jsonl", "--history", "h.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(tmp_path / "h.db") as db:
        assert db.execute("SELECT mean, sd, min, max FROM metrics").fetchall() == [(1.7e308, 0.0, 1.7e308, 1.7e308)]
    out = bench("export", "--history", "h.db", cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["metrics"][0]["samples"] == [1.7e308, 1.7e308]


def test_history_copy_names_a_run_it_cannot_copy_and_goes_on(tmp_path: Path) -> None:
    """docs/history.md, "bench history push, bench history copy": a run holding a NUL (stored by
    an older caramel; PostgreSQL's text refuses it) is named with its field and left out, on
    either engine alike, and the other runs are copied (before, the copy to PostgreSQL stopped
    there for ever, naming no run)."""
    with History(str(tmp_path / "src.db")) as source:
        for key, row in (("a:1", {"n": "1"}), ("b:1", {"n": "x\0y"}), ("c:1", {"n": "3"})):
            source.add(RunRecord(key, "bench"), [Metric("t", row, "time", "s", "lower", [1.0])])
    proc = bench("history", "copy", "src.db", "dst.db", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == "2 new run(s), 2 new figure(s), 0 baseline(s) copied from src.db to dst.db\n"
    assert proc.stderr.splitlines() == [
        "warning: not copied: run 'b:1': metrics[0].row.n holds a NUL character (U+0000), which PostgreSQL "
        "cannot store",
        "error: 1 run(s) of src.db were not copied (above); the others were"]
    with History(str(tmp_path / "dst.db")) as copied:
        assert [run.run_key for run in copied.runs()] == ["a:1", "c:1"]


@pytest.mark.parametrize(("where", "setting"), [("environment", "the setting history ($CARAMEL_HISTORY)"),
                                                ("option", "--history")])
def test_a_history_url_with_a_bad_port_names_the_setting(tmp_path: Path, where: str, setting: str) -> None:
    """docs/settings.md (settings are checked when read; the history is a file or a postgresql://
    URL): a port that is no number is an error naming where the URL came from, never a ValueError
    or a server reported unreachable."""
    url = "postgresql://bench:secret@db:5432x/h"
    args = ("history", "list") + (("--history", url) if where == "option" else ())
    env = {"CARAMEL_HISTORY": url} if where == "environment" else {}
    proc = bench(*args, cwd=tmp_path, **env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0] == ("error: the history URL postgresql://bench:***@db:5432x/h has the port "
                                           f"'5432x', which is no number from 0 to 65535 (from {setting})")


def test_a_sink_url_with_a_bad_port_names_the_setting(tmp_path: Path) -> None:
    """docs/history.md, "Sinks": a sink's URL is checked when the settings are read."""
    proc = bench("history", "push", "--history", "h.db", cwd=tmp_path, CARAMEL_SINKS="json=http://h:80x/p")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == ("error: $CARAMEL_SINKS: a sink's URL 'http://h:80x/p' has a port that is "
                                           "no number from 0 to 65535")


def test_export_site_leaves_imported_runs_their_site_whatever_host_they_name(tmp_path: Path) -> None:
    """docs/history.md, "bench export, bench import" (`site`): `bench export --site NAME` renames
    the runs recorded on this host; imported runs keep theirs, even when their host name is this
    host's (before, such a run was relabelled)."""
    here = socket.gethostname()
    doc = line(run_key=f"{here}:/r/0:1", host=here)
    doc["site"] = "siteA"
    (tmp_path / "in.jsonl").write_text(json.dumps(doc) + "\n")
    assert bench("import", "in.jsonl", "--history", "h.db", cwd=tmp_path).returncode == 0
    with History(str(tmp_path / "h.db")) as history:
        history.add(RunRecord(f"{here}:/r/1:1", "b", host=here, site="old"),
                    [Metric("t", {"n": "1"}, "time", "s", "lower", [1.0])])
    out = bench("export", "--history", "h.db", "--site", "siteB", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    sites = {json.loads(text)["run"]["run_key"]: json.loads(text)["site"] for text in out.stdout.splitlines()}
    assert sites == {f"{here}:/r/0:1": "siteA", f"{here}:/r/1:1": "siteB"}
