"""Secrets never reach what caramel writes (docs/security.md, "Secrets"): every file a run, a
result,
an export, a dashboard and a report leave holds none of the secrets in the environment, the settings
file or a history URL; `bench config` and error messages mask them however the URL is written; run
states and histories are created 0600. A bad setting is refused before anything is made
(docs/settings.md)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

# the secrets: in the environment, exported by a do (built at run time: the file's text holds
# none of
# them), and in URLs of the settings file and the environment
SECRETS = (
    "tokSECRET1",
    "pwSECRET2",
    "urlSECRET3",
    "doSECRET4",
    "fileSECRET5",
    "sslSECRET6",
    "sinkSECRET7",
    "querySECRET8",
)

BENCH = """
name: leak
outpath: runs
parameterset:
  - name: p
    parameter:
      - {name: n, type: int, _: "1,2"}
patternset:
  - name: pat
    pattern:
      - {name: value, type: float, _: "value=$jube_pat_fp"}
step:
  - name: first
    use: p
    export: true
    do:
      - export STEP_TOKEN=$$(printf 'do%s' SECRET4)
      - echo value=$n
  - name: second
    depend: first
    do: echo "child sees $${#STEP_TOKEN} characters"
analyser:
  - name: ana
    use: pat
    analyse: {step: first, file: stdout}
result:
  - use: ana
    table: {name: t, style: csv, column: [n, value]}
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(
        tmp_path,
        HF_TOKEN="tokSECRET1",
        MY_DB_PASSWORD="pwSECRET2",
        DATABASE_URL="postgresql://bench:urlSECRET3@db.example/runs",
        CARAMEL_HISTORY=str(tmp_path / "data" / "history.db"),
    )


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


@pytest.mark.slow
def test_no_secret_in_any_file_a_run_export_dashboard_and_report_write(tmp_path: Path) -> None:
    """docs/security.md, "Secrets": grep over every file caramel wrote finds no secret of the
    environment (a token, a password, a URL's password) nor one a do exported in an export: step."""
    (tmp_path / "leak.yaml").write_text(BENCH)
    env = _env(tmp_path)
    for args in (
        ["run", "leak.yaml"],
        ["result", "runs", "-i", "last", "--output", "table.csv"],
        ["export", "-o", "export.jsonl"],
        ["dashboard", "-o", "page.html"],
        ["report", "runs", "-i", "last", "-o", "report.html"],
    ):
        done = bench(*args, cwd=tmp_path, env=env)
        assert done.returncode == 0, (args, done.stderr)
        for secret in SECRETS:
            assert secret not in done.stdout + done.stderr, (args, secret)
    written = [p for p in _files(tmp_path) if p.name != "leak.yaml"]
    assert any(p.name == "caramel.db" for p in written) and (tmp_path / "page.html").exists()
    for path in written:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} in {path}"
    # the child of the export step still got the exported variable while the run ran
    child = next(p for p in (tmp_path / "runs").rglob("stdout") if "second" in str(p))
    assert "child sees 9 characters" in child.read_text()


@pytest.mark.slow
def test_run_states_and_histories_are_created_for_their_owner_alone(tmp_path: Path) -> None:
    """docs/security.md, "Secrets": caramel.db and the history are 0600 (0640 with
    group_readable)."""
    (tmp_path / "leak.yaml").write_text(BENCH)
    env = _env(tmp_path)
    assert bench("run", "leak.yaml", cwd=tmp_path, env=env).returncode == 0
    assert bench("result", "runs", "-i", "last", cwd=tmp_path, env=env).returncode == 0
    state = next((tmp_path / "runs").rglob("caramel.db"))
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "data" / "history.db").st_mode) == 0o600
    shared = dict(env, CARAMEL_GROUP_READABLE="yes", CARAMEL_HISTORY=str(tmp_path / "shared.db"))
    assert bench("run", "leak.yaml", cwd=tmp_path, env=shared).returncode == 0
    assert bench("result", "runs", "-i", "last", cwd=tmp_path, env=shared).returncode == 0
    newest = max((tmp_path / "runs").rglob("caramel.db"), key=lambda p: p.stat().st_mtime)
    assert stat.S_IMODE(os.stat(newest).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "shared.db").st_mode) == 0o640


def test_bench_config_masks_the_history_and_sinks_passwords(tmp_path: Path) -> None:
    """docs/security.md, "Secrets": `bench config` (and --json) show a history URL from the settings
    file and sinks from the environment without their passwords, however the URL is written (a
    password holding `/ # ?`, percent-encoding, sslpassword= and token= parameters)."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "history: 'postgresql://bench:file/SECRET5#x?y@db.example:5432/hist"
        "?sslmode=require&sslpassword=sslSECRET6'\n"
    )
    env = isolated_env(
        tmp_path,
        CARAMEL_SETTINGS=str(settings),
        CARAMEL_SINKS="json=https://u:sinkSECRET7@sink.example/in?%74oken=querySECRET8",
    )
    for args in (["config"], ["config", "--json"]):
        done = bench(*args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert "db.example:5432/hist" in done.stdout and "sink.example/in" in done.stdout
        for secret in ("file/SECRET5", "SECRET5", "sslSECRET6", "sinkSECRET7", "querySECRET8"):
            assert secret not in done.stdout + done.stderr, (args, secret)
    shown = {
        row["name"]: row["value"]
        for row in json.loads(bench("config", "--json", cwd=tmp_path, env=env).stdout)
    }
    assert (
        shown["history"]
        == "postgresql://bench:***@db.example:5432/hist?sslmode=require&sslpassword=***"
    )


def test_an_error_about_a_history_url_never_prints_its_password(tmp_path: Path) -> None:
    """docs/security.md, "Secrets": a password holding `/` (which urlsplit misreads) is masked in an
    error message too. Nothing listens on port 1: no server is started."""
    url = "postgresql://bench:pa/ssSECRET9@127.0.0.1:1/db"
    done = bench("history", "list", "--history", url, cwd=tmp_path, env=isolated_env(tmp_path))
    assert done.returncode != 0 and "127.0.0.1" in done.stderr, done.stderr
    assert "SECRET9" not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_a_bad_journal_setting_is_refused_before_a_run_is_made(tmp_path: Path) -> None:
    """docs/settings.md: a bad CARAMEL_SQLITE_JOURNAL is an error naming the variable and the
    allowed values before anything is made (no run folder a later `continue` would run);
    `bench config`
    says so."""
    (tmp_path / "leak.yaml").write_text(BENCH)
    for bad in ("memory", "off", "nonsense"):
        env = isolated_env(tmp_path, CARAMEL_SQLITE_JOURNAL=bad)
        done = bench("run", "leak.yaml", cwd=tmp_path, env=env)
        assert done.returncode == 2, done.stderr
        assert (
            f"CARAMEL_SQLITE_JOURNAL='{bad}'" in done.stderr
            and "wal, delete, truncate, persist" in done.stderr
        )
        assert not (tmp_path / "runs").exists()
        config = bench("config", cwd=tmp_path, env=env)
        assert config.returncode == 2 and f"CARAMEL_SQLITE_JOURNAL='{bad}'" in config.stderr
    settings = tmp_path / "settings.yaml"
    settings.write_text("sqlite_journal: memory\n")
    done = bench(
        "run", "leak.yaml", cwd=tmp_path, env=isolated_env(tmp_path, CARAMEL_SETTINGS=str(settings))
    )
    assert done.returncode == 2 and f"{settings}: sqlite_journal='memory'" in done.stderr, (
        done.stderr
    )
    assert not (tmp_path / "runs").exists()
