"""Which engine a history name picks, URLs printed without their password, the settings file."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.consumers.history.engine import is_url
from caramel.consumers.history.settings import SinkShape, load_settings
from caramel.consumers.history.store import default_path
from caramel.errors import SpecError
from caramel.redact import url as safe_url


@given(user=st.text(st.characters(categories=("L", "N")), min_size=1, max_size=8),
       password=st.text(min_size=4, max_size=20))
def test_a_printed_url_never_holds_its_password(user, password):
    url = f"postgresql://{user}:{quote(password, safe='')}@db.example.org:5433/caramel"
    shown = safe_url(url)
    # the password masked where it was (issue 36: one masking for every URL shown, caramel.redact)
    assert shown == f"postgresql://{user}:***@db.example.org:5433/caramel" and is_url(url)


def test_engines_by_name():
    assert is_url("postgresql://h/db") and is_url("postgres://h/db")
    assert not is_url("/tmp/history.db") and not is_url("sqlite:///tmp/h.db")
    assert safe_url("/tmp/history.db") == "/tmp/history.db"
    assert safe_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_settings_file_names_the_history_and_sinks(tmp_path, monkeypatch):
    settings = tmp_path / "settings.yaml"
    settings.write_text("history: postgresql://bench@db/caramel\n"
                        "sinks:\n  - {shape: elasticsearch, url: 'http://es:9200/_bulk', index: perf}\n")
    monkeypatch.setenv("CARAMEL_SETTINGS", str(settings))
    monkeypatch.delenv("CARAMEL_HISTORY", raising=False)
    monkeypatch.setenv("CARAMEL_SINKS", "gelf=http://graylog:12201/gelf")
    assert default_path() == "postgresql://bench@db/caramel"
    loaded = load_settings()
    assert [(s.shape, s.url, s.index) for s in loaded.sinks] == [
        (SinkShape.ELASTICSEARCH, "http://es:9200/_bulk", "perf"),
        (SinkShape.GELF, "http://graylog:12201/gelf", "caramel")]
    monkeypatch.setenv("CARAMEL_HISTORY", str(tmp_path / "h.db"))  # the environment wins
    assert default_path() == str(tmp_path / "h.db")


@pytest.mark.parametrize("text, words", [
    ("sinks:\n  - {shape: kafka, url: 'http://k'}\n", "unknown sink shape 'kafka'"),
    ("sinks:\n  - {shape: json, url: 'ftp://x'}\n", "a sink's URL is http:// or https://"),
    ("sinks:\n  - {shape: json}\n", "a sink is a mapping with url:"),
    ("- just a list\n", "the settings are a mapping"),
    ("history: [unclosed\n", "cannot read the settings"),
])
def test_bad_settings_name_the_file(tmp_path, monkeypatch, text, words):
    settings = tmp_path / "settings.yaml"
    settings.write_text(text)
    monkeypatch.setenv("CARAMEL_SETTINGS", str(settings))
    monkeypatch.delenv("CARAMEL_SINKS", raising=False)
    with pytest.raises(SpecError) as caught:
        load_settings()
    assert words in str(caught.value) and str(settings) in str(caught.value)
