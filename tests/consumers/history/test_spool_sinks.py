"""Nothing run is lost: the PostgreSQL server stopped in the middle of `bench result` (the figures
are kept locally, `bench history push` delivers them once), and sinks (an HTTP receiver in this
process) that take every row of a run, or are down and get the rows later, each once."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.consumers.history.store import History
from caramel.redact import url as safe_url

from .conftest import DATA
from .pgserver import PASSWORD, PgServer, missing

FIGURES = 4  # steady.yaml: 2 configurations × (elapsed, rate)


@pytest.fixture
def steady_run(tmp_path: Path) -> Path:
    shutil.copy(DATA / "steady.yaml", tmp_path / "steady.yaml")
    ran = bench("run", "steady.yaml", "--tag", "local", "-q", cwd=tmp_path, env=isolated_env(tmp_path))
    assert ran.returncode == 0, ran.stderr
    return tmp_path


@pytest.mark.slow
def test_server_stopped_during_result_keeps_the_run_and_push_delivers_it_once(steady_run, monkeypatch, capsys):
    if missing():
        pytest.skip(missing())
    server = PgServer()  # a server of its own: this test stops it
    try:
        url = server.new_database()
        for name, value in isolated_env(steady_run, CARAMEL_HISTORY=url).items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(steady_run)
        import caramel.stages.report.results as results
        from caramel.cli.main import main

        real = results.history_tables

        def stop_then_tables(*args, **kwargs):  # the history is open: the server goes away now
            server.stop()
            return real(*args, **kwargs)

        monkeypatch.setattr(results, "history_tables", stop_then_tables)
        assert main(["result", "-i", "last"]) == 0
        said = capsys.readouterr().err
        assert "its figures are kept in" in said and "bench history push" in said, said
        assert safe_url(url) in said and PASSWORD not in said
        monkeypatch.undo()
        server.start()
        env = isolated_env(steady_run, CARAMEL_HISTORY=url)
        pushed = bench("history", "push", cwd=steady_run, env=env)
        assert pushed.returncode == 0 and "1 run(s) (4 figure(s)) delivered" in pushed.stdout, pushed.stderr
        again = bench("history", "push", cwd=steady_run, env=env)
        assert again.returncode == 0 and "nothing to push" in again.stderr
        with History(url) as history:
            (run,) = history.runs()
            assert len(history.metrics(run.run_key)) == FIGURES
    finally:
        server.close()


class Receiver:
    """An HTTP endpoint in this process: records each request's body, or answers 503 while down."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        self.down = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if owner.down:
                    self.send_response(503)
                    self.end_headers()
                    return
                owner.bodies.append((self.path, body))
                answer = b'{"errors": false, "items": []}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def rows(self) -> list[dict]:
        """Every row received, whatever the shape."""
        out = []
        for path, body in self.bodies:
            if path.endswith("_bulk"):
                lines = [json.loads(line) for line in body.splitlines() if line.strip()]
                out += lines[1::2]
            elif path.endswith("gelf"):
                out.append(json.loads(body))
            else:
                out += json.loads(body)
        return out


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.server.shutdown()


def test_sinks_receive_every_row_of_a_run_in_each_shape(steady_run, receiver):
    sinks = f"json={receiver.url}/rows elasticsearch={receiver.url}/_bulk gelf={receiver.url}/gelf"
    env = isolated_env(steady_run, CARAMEL_HISTORY=str(steady_run / "h.db"), CARAMEL_SINKS=sinks, CARAMEL_SITE="lab")
    done = bench("result", "-i", "last", cwd=steady_run, env=env)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    plain = json.loads(next(body for path, body in receiver.bodies if path == "/rows"))
    assert len(plain) == FIGURES
    row = next(r for r in plain if r["figure"] == "rate")
    assert row["direction"] == "higher" and row["site"] == "lab" and row["value"] > 0
    assert next(r for r in plain if r["figure"] == "elapsed")["unit"] == "s"
    assert set(row["configuration"]) >= {"items"} and "fingerprint" in row and row["provenance"]["run_key"]
    bulk = [json.loads(line) for path, body in receiver.bodies if path == "/_bulk" for line in body.splitlines()]
    assert [b["index"]["_id"] for b in bulk[::2]] == [r["id"] for r in plain] and bulk[1]["@timestamp"]
    gelf = [json.loads(body) for path, body in receiver.bodies if path == "/gelf"]
    assert len(gelf) == FIGURES and all(g["version"] == "1.1" and g["_figure"] for g in gelf)
    assert {g["_row_id"] for g in gelf} == {r["id"] for r in plain}
    again = bench("result", "-i", "last", cwd=steady_run, env=env)  # nothing changed: nothing sent twice
    assert again.returncode == 0 and len(receiver.rows()) == 3 * FIGURES


@pytest.mark.slow
def test_a_sink_down_never_fails_the_run_and_gets_each_row_once_later(steady_run, receiver):
    settings = steady_run / "settings.yaml"
    settings.write_text(f"sinks:\n  - {{shape: json, url: '{receiver.url}/rows', timeout: 2}}\n")
    env = isolated_env(steady_run, CARAMEL_HISTORY=str(steady_run / "h.db"), CARAMEL_SETTINGS=str(settings))
    receiver.down = True
    done = bench("result", "-i", "last", cwd=steady_run, env=env)
    assert done.returncode == 0 and "did not take the results (it answered HTTP 503" in done.stderr, done.stderr
    assert "bench history push" in done.stderr and not receiver.bodies
    with History(str(steady_run / "h.db")) as history:
        assert len(history.runs()) == 1  # the history has the run all the same
    receiver.down = False
    pushed = bench("history", "push", cwd=steady_run, env=env)
    assert pushed.returncode == 0 and f"{FIGURES} row(s) sent to the sinks" in pushed.stdout, pushed.stderr
    assert bench("history", "push", cwd=steady_run, env=env).returncode == 0
    rows = receiver.rows()
    assert len(rows) == FIGURES and len({r["id"] for r in rows}) == FIGURES


@pytest.mark.slow
def test_a_sink_that_never_answers_is_queued_quickly(steady_run):
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections, never answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/rows"
    settings = steady_run / "settings.yaml"
    settings.write_text(f"sinks:\n  - {{shape: json, url: '{url}', timeout: 1}}\n")
    env = isolated_env(steady_run, CARAMEL_HISTORY=str(steady_run / "h.db"), CARAMEL_SETTINGS=str(settings))
    done = bench("result", "-i", "last", cwd=steady_run, env=env, timeout=60)
    silent.close()
    assert done.returncode == 0 and "no answer" in done.stderr and url in done.stderr, done.stderr
