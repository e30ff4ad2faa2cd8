"""fs.paths: a path made from text stays inside its root or is refused naming its source."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.errors import Location
from caramel.fs.paths import PathError, inside, is_within, name


def test_a_plain_relative_path_resolves_below_the_root(tmp_path):
    assert inside(str(tmp_path), "a/b.db", "database file") == str(tmp_path / "a" / "b.db")


@pytest.mark.parametrize("text", ["../x", "a/../../x", "x/../../../../precious/sub", "/etc/passwd", ""])
def test_a_path_leaving_the_root_is_refused_naming_its_source(tmp_path, text):
    with pytest.raises(PathError) as caught:
        inside(str(tmp_path), text, "database file", Location("bench.xml", 7))
    assert caught.value.where == Location("bench.xml", 7)
    assert "database file" in str(caught.value)


def test_an_absolute_path_below_the_root_passes_only_when_allowed(tmp_path):
    text = str(tmp_path / "r.db")
    assert inside(str(tmp_path), text, "file", absolute_ok=True) == text
    with pytest.raises(PathError):
        inside(str(tmp_path), text, "file")


def test_the_source_is_named_in_words_when_it_is_no_file_line(tmp_path):
    with pytest.raises(PathError, match=r"from the run record"):
        inside(str(tmp_path), "../x", "workpackage folder", "the run record")


@pytest.mark.parametrize("text", ["x/../y", "..", ".", "", "a\\b", "a\0b", "/abs"])
def test_a_name_is_one_component(text):
    with pytest.raises(PathError, match="would be a file outside"):
        name(text, "shared name", "the run folder", Location("b.yaml", 3))


def test_a_plain_name_passes():
    assert name("shared", "shared name", "the run folder") == "shared"


def test_a_prefix_is_not_inside():
    assert not is_within("/a/b", "/a/bc")
    assert is_within("/a/b", "/a/b/c")


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "", "/", "c.d"]), max_size=8).map("/".join))
def test_whatever_inside_returns_is_below_the_root(text):
    root = "/r/o/o/t"
    try:
        path = inside(root, text, "file")
    except PathError:
        return
    assert path == root or path.startswith(root + os.sep)
