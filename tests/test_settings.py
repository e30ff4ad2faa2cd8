"""caramel.settings: every setting declared once, read when a command starts, shown by `bench config`."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

import caramel
from caramel import settings
from caramel.errors import RunError, SpecError
from caramel.settings import SETTINGS, Source, command_scope, current, load, markdown_table

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_table_is_the_declarations() -> None:
    page = (ROOT / "docs" / "settings.md").read_text()
    assert markdown_table() in page, "docs/settings.md drifted from caramel.settings.SETTINGS: paste markdown_table()"


def test_every_declaration_is_a_field_and_every_field_declared() -> None:
    declared = [s.name for s in SETTINGS]
    assert declared == [f.name for f in fields(settings.Settings) if f.name not in ("sink_entries", "origin")]
    assert len({s.env for s in SETTINGS}) == len(SETTINGS)


def test_no_module_reads_a_caramel_variable_itself() -> None:
    """Only caramel.settings reads the environment for a setting (variables caramel sets for jobs aside)."""
    reads = re.compile(r"""environ(?:\.get\(|\[)\s*["'](?:CARAMEL|JUBE)_""")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in Path(caramel.__file__).parent.rglob("*.py")
             if path.name != "settings.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if reads.search(line)]
    assert not found, f"read through caramel.settings instead: {found}"


def test_environment_then_file_then_default(tmp_path: Path) -> None:
    file = tmp_path / "settings.yaml"
    file.write_text("kill_grace: 2\nsite: from-file\nhistory: /h/file.db\n")
    env = {"CARAMEL_SETTINGS": str(file), "CARAMEL_DATA_DIR": str(tmp_path), "CARAMEL_SITE": "from-env"}
    got = load(env)
    assert (got.site, got.origin["site"]) == ("from-env", Source.ENVIRONMENT)
    assert (got.kill_grace, got.origin["kill_grace"]) == (2.0, Source.FILE)
    assert (got.history, got.origin["history"]) == ("/h/file.db", Source.FILE)
    assert (got.done_file_grace, got.origin["done_file_grace"]) == (5.0, Source.DEFAULT)
    assert load({"CARAMEL_DATA_DIR": str(tmp_path / "d")}).history == str(tmp_path / "d" / "history.db")


def test_a_variable_set_after_import_counts_outside_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMEL_DONE_FILE_GRACE", "0.5")
    assert current().done_file_grace == 0.5
    monkeypatch.setenv("CARAMEL_DONE_FILE_GRACE", "7")
    assert current().done_file_grace == 7.0


def test_a_command_keeps_the_values_it_started_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMEL_KILL_GRACE", "3")
    with command_scope():
        monkeypatch.setenv("CARAMEL_KILL_GRACE", "9")
        assert current().kill_grace == 3.0
    assert current().kill_grace == 9.0


@pytest.mark.parametrize("text", ["abc", "-1", "nan"])
def test_a_bad_number_names_the_variable(text: str) -> None:
    with pytest.raises(RunError, match=f"CARAMEL_DB_TIMEOUT='{text}': expected a number of seconds"):
        load({"CARAMEL_DB_TIMEOUT": text, "CARAMEL_SETTINGS": "/nonexistent/settings.yaml"})


def test_an_unknown_key_in_the_file_names_the_allowed_ones(tmp_path: Path) -> None:
    file = tmp_path / "settings.yaml"
    file.write_text("kill_grase: 2\n")
    with pytest.raises(SpecError) as caught:
        load({"CARAMEL_SETTINGS": str(file)})
    assert "unknown setting 'kill_grase'" in str(caught.value) and str(file) in str(caught.value)
    assert "kill_grace" in str(caught.value)


def test_bench_config_shows_values_and_sources(tmp_path: Path) -> None:
    file = tmp_path / "settings.yaml"
    file.write_text("history: /somewhere/h.db\n")
    env = isolated_env(tmp_path, CARAMEL_SETTINGS=str(file), CARAMEL_KILL_GRACE="1.5")
    done = bench("config", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    shown = {s["name"]: s for s in json.loads(done.stdout)}
    assert [s["name"] for s in json.loads(done.stdout)] == [s.name for s in SETTINGS]
    assert (shown["kill_grace"]["value"], shown["kill_grace"]["source"]) == ("1.5", "environment")
    assert (shown["history"]["value"], shown["history"]["source"]) == ("/somewhere/h.db", "settings file")
    assert (shown["db_timeout"]["value"], shown["db_timeout"]["source"]) == ("10", "default")
    plain = bench("config", cwd=tmp_path, env=env).stdout.splitlines()
    assert plain[0].split() == ["setting", "variable", "value", "source"]
    assert "kill_grace         CARAMEL_KILL_GRACE        1.5" in "\n".join(plain)
    assert all("─" not in line and line == line.rstrip() for line in plain)


def test_bench_config_refuses_a_bad_value_in_words(tmp_path: Path) -> None:
    done = bench("config", cwd=tmp_path, env=isolated_env(tmp_path, CARAMEL_KILL_GRACE="soon"))
    assert done.returncode == 2 and "CARAMEL_KILL_GRACE='soon'" in done.stderr and "Traceback" not in done.stderr
