"""A team's history on the suite's own PostgreSQL server (conftest.pg_server): two sites writing at
once, the commands that read it, many writers, copy between engines, the server away."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.consumers.history.engine import HistoryUnavailable
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.redact import url as safe_url

from .conftest import DATA, bench_env
from .pgserver import PASSWORD


def _site(base: Path, name: str, url: str, runs: int, errors: list) -> None:
    folder = base / name
    folder.mkdir()
    shutil.copy(DATA / "steady.yaml", folder / "steady.yaml")
    env = isolated_env(folder, CARAMEL_SITE=name, CARAMEL_HISTORY=url)
    for _ in range(runs):
        ran = bench("run", "steady.yaml", "--tag", "local", "--repeat", "2", "-q", cwd=folder, env=env)
        done = bench("result", "-i", "last", cwd=folder, env=env)
        if ran.returncode or done.returncode or "warning" in done.stderr:
            errors.append((name, ran.stderr, done.stderr))


def test_two_sites_write_one_history_that_every_reader_reads(tmp_path, pg_url):
    errors: list = []
    sites = [threading.Thread(target=_site, args=(tmp_path, name, pg_url, 2, errors)) for name in ("lab", "cluster")]
    for thread in sites:
        thread.start()
    for thread in sites:
        thread.join()
    assert not errors, errors
    with History(pg_url) as history:
        runs = history.runs()
        assert sorted(r.site for r in runs) == ["cluster", "cluster", "lab", "lab"]
        assert all(len(history.metrics(r.run_key)) == 4 for r in runs)  # 2 configurations × elapsed, rate
    lab = tmp_path / "lab"
    env = isolated_env(lab, CARAMEL_HISTORY=pg_url)
    page = bench("dashboard", "-o", "page.html", cwd=lab, env=env)
    assert page.returncode == 0, page.stderr
    text = (lab / "page.html").read_text()
    assert "lab" in text and "cluster" in text and "dashboard of 4 run(s)" in page.stderr
    compared = bench("compare", "-i", "last", "--baseline", "0", "--format", "json", cwd=lab, env=env)
    assert compared.returncode in (0, 1) and json.loads(compared.stdout), compared.stderr
    predicted = bench("predict", "steady.yaml", "--tag", "local", "--format", "json", cwd=lab, env=env)
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["predictions"]
    listed = bench("history", "list", cwd=lab, env=env)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 4 and PASSWORD not in listed.stdout
    exported = bench("export", "-o", "all.jsonl", cwd=lab, env=env)
    assert exported.returncode == 0 and len((lab / "all.jsonl").read_text().splitlines()) == 4
    local = isolated_env(lab, CARAMEL_HISTORY=str(tmp_path / "local.db"))
    assert bench("import", "all.jsonl", cwd=lab, env=local).stdout.startswith("4 new run(s)")
    removed = bench("history", "remove", runs[0].run_key, cwd=lab, env=env)
    assert removed.returncode == 0 and PASSWORD not in removed.stdout + removed.stderr


def _writer(url: str, writer: int, errors: list) -> None:
    try:
        for result in range(50):
            with History(url) as history:
                history.add(RunRecord(f"w{writer}-r{result}", "many", started=float(result), site=f"s{writer}"),
                            [Metric("t", {"n": str(i)}, "rate", "1/s", "higher", [float(i), i + 1.0]) for i in range(3)],
                            replace=True)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(repr(exc))


def test_eight_writers_times_fifty_results_every_row_once(pg_url):
    errors: list = []
    threads = [threading.Thread(target=_writer, args=(pg_url, w, errors)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    with History(pg_url) as history:
        assert history.db.execute("SELECT count(*), count(DISTINCT run_key) FROM runs").fetchone() == (400, 400)
        assert history.db.execute("SELECT count(*) FROM metrics").fetchone()[0] == 1200
    for writer in range(2):  # the same results again: nothing doubles
        _writer(pg_url, writer, errors)
    with History(pg_url) as history:
        assert history.db.execute("SELECT count(*) FROM metrics").fetchone()[0] == 1200


def test_copy_between_engines_both_ways(tmp_path, pg_url):
    source = tmp_path / "source.db"
    with History(str(source)) as history:
        for i in range(3):
            history.add(RunRecord(f"r{i}", "b", started=float(i), site="lab", fingerprint={"cpu": "x"}),
                        [Metric("t", {"n": "1"}, "rate", "1/s", "higher", [1.0 + i, 2.0])])
        history.set_baseline("base", "r0")
    env = bench_env(tmp_path, tmp_path / "unused.db")
    there = bench("history", "copy", str(source), pg_url, cwd=tmp_path, env=env)
    assert there.returncode == 0 and "3 new run(s), 3 new figure(s), 1 baseline(s)" in there.stdout, there.stderr
    assert PASSWORD not in there.stdout and safe_url(pg_url) in there.stdout
    again = bench("history", "copy", str(source), pg_url, cwd=tmp_path, env=env)
    assert "0 new run(s), 0 new figure(s)" in again.stdout
    back = bench("history", "copy", pg_url, str(tmp_path / "back.db"), cwd=tmp_path, env=env)
    assert back.returncode == 0, back.stderr
    with History(str(source)) as a, History(str(tmp_path / "back.db")) as b:
        assert a.runs() == b.runs() and [a.metrics(r.run_key) for r in a.runs()] == [b.metrics(r.run_key)
                                                                                      for r in b.runs()]
        assert b.baseline("base") == "r0"


def test_bad_servers_are_clear_errors_without_the_password(tmp_path, pg_server, pg_url):
    env = bench_env(tmp_path, tmp_path / "unused.db")
    wrong = pg_url.replace(PASSWORD, "not-it")
    refused = f"postgresql://caramel:{PASSWORD}@127.0.0.1:1/nothing"
    with History(pg_url) as history:
        history.db.execute("UPDATE meta SET value = '9' WHERE key = 'schema'")
    for url, words in ((wrong, "password authentication failed"), (refused, "Connection refused"),
                       (pg_url, "a history of another caramel (schema 9")):
        done = bench("history", "list", "--history", url, cwd=tmp_path, env=env)
        assert done.returncode == 2 and words in done.stderr and safe_url(url) in done.stderr, done.stderr
        assert PASSWORD not in done.stderr and "not-it" not in done.stderr and "Traceback" not in done.stderr
        assert "hint:" in done.stderr
    with pytest.raises(HistoryUnavailable):
        History(wrong)


def test_a_reader_without_write_rights_reads_the_team_history(tmp_path, pg_server, pg_url):
    with History(pg_url) as history:
        history.add(RunRecord("r1", "b", started=1.0, site="lab"), [Metric("t", {"n": "1"}, "rate", "", "higher", [2.0])])
    database = pg_url.rsplit("/", 1)[1]
    pg_server.sql(f"DO $$ BEGIN CREATE ROLE reader LOGIN PASSWORD '{PASSWORD}'; EXCEPTION WHEN duplicate_object "
                  "THEN NULL; END $$")
    pg_server.sql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader", database)
    reader = pg_url.replace("caramel:", "reader:", 1)
    env = isolated_env(tmp_path, CARAMEL_HISTORY=reader)
    listed = bench("history", "list", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and listed.stdout.startswith("r1"), listed.stderr
    page = bench("dashboard", "-o", "page.html", cwd=tmp_path, env=env)
    assert page.returncode == 0, page.stderr


def test_no_secret_reaches_any_file_with_a_postgresql_history(tmp_path, pg_url):
    """docs/security.md, "Secrets" (issue 36): with the history on PostgreSQL (its URL carries the
    password) and secrets in the environment and the settings file, no file a run, its result, an
    export, a dashboard and a report write holds any of them, nor does anything bench prints."""
    token, key = "tok-9f3c1a-secret", "key-77e2b0-secret"
    folder = tmp_path / "site"
    folder.mkdir()
    shutil.copy(DATA / "steady.yaml", folder / "steady.yaml")
    settings = tmp_path / "settings.yaml"  # the history, with its password, from the settings file
    settings.write_text(json.dumps({"history": pg_url}) + "\n")
    env = isolated_env(folder, CARAMEL_SETTINGS=str(settings), API_TOKEN=token, SERVICE_KEY=key,
                       HF_TOKEN=token)
    said = []
    for args in (("run", "steady.yaml", "--tag", "local", "--repeat", "2", "-q"),
                 ("result", "-i", "last"), ("export", "-o", "all.jsonl"),
                 ("dashboard", "-o", "page.html"), ("report", "-i", "last", "-o", "report.html"),
                 ("config",), ("config", "--json")):
        done = bench(*args, cwd=folder, env=env)
        said.append(done.stdout + done.stderr)
        assert done.returncode == 0, (args, done.stderr)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != settings]
    assert any(p.name == "page.html" for p in written) and any(p.name == "report.html" for p in written)
    for secret in (PASSWORD, token, key):
        assert not [str(p) for p in written if secret.encode() in p.read_bytes()], secret
        assert not [text for text in said if secret in text], secret
