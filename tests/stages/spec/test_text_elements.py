"""A do (or prepare) that YAML does not read as text is an error naming the file and line, never an
empty do: an unquoted ': ' inside the command makes YAML read a mapping (issue 21)."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from caramel.errors import SpecError
from caramel.stages.spec.yaml_reader import read_yaml

DO_KEYS = {"_", "active", "break_file", "done_file", "error_file", "shared", "stderr", "stdout", "tag", "work_dir"}
HEAD = "name: b\noutpath: run\nstep:\n  name: run\n  do:\n"

# Words a shell command is made of; no YAML indicator at the start of a word.
word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.|;{}'", min_size=1, max_size=8).filter(
    lambda w: w[0] not in "{}|'")


def _write(tmp_path, body: str):
    path = tmp_path / "b.yaml"
    path.write_text(HEAD + body)
    return str(path)


@settings(max_examples=60, deadline=None)
@given(before=st.lists(word, min_size=1, max_size=4), after=st.lists(word, min_size=1, max_size=4))
@example(before=["grep", "-q", "x", "out", "||", "{", "echo", "'sanity"], after=["failed';", "exit", "1;", "}"])
def test_an_unquoted_colon_space_is_an_error_naming_the_line(tmp_path_factory, before, after) -> None:
    # `_: 0` or `tag: x` is a do written as a mapping on purpose (JUBE's text key and the do's attributes)
    assume(" ".join(before) not in DO_KEYS)
    # a near miss of a do key (`woir`) is answered as a misspelt key, with did-you-mean
    assume(not difflib.get_close_matches(" ".join(before), DO_KEYS, n=1, cutoff=0.6))
    text = " ".join(before) + ": " + " ".join(after)
    path = _write(tmp_path_factory.mktemp("y"), f"    - echo first\n    - {text}\n")
    with pytest.raises(SpecError) as caught:
        read_yaml(path)
    assert caught.value.where.line == 7
    assert "YAML read this do as a mapping" in caught.value.message
    assert "': '" in caught.value.message


@settings(max_examples=60, deadline=None)
@given(before=st.lists(word, min_size=1, max_size=4), after=st.lists(word, min_size=1, max_size=4))
def test_the_same_command_quoted_is_read_whole(tmp_path_factory, before, after) -> None:
    text = " ".join(before) + ": " + " ".join(after)
    path = _write(tmp_path_factory.mktemp("y"), f"    - \"{text}\"\n")
    do = next(read_yaml(path).iter("do"))
    assert do.text == text


def test_a_do_mapping_with_its_text_and_attributes_is_still_read(tmp_path) -> None:
    path = _write(tmp_path, "    - {_: \"echo a: b\", done_file: ready}\n")
    do = next(read_yaml(path).iter("do"))
    assert (do.text, do.attrs) == ("echo a: b", {"done_file": "ready"})


def test_a_misspelt_attribute_without_text_gets_did_you_mean(tmp_path) -> None:
    path = _write(tmp_path, "    - {done_fil: ready}\n")
    with pytest.raises(SpecError, match="unknown key 'done_fil'") as caught:
        read_yaml(path)
    assert "done_file" in caught.value.hint


def test_an_empty_do_is_an_error(tmp_path) -> None:
    path = _write(tmp_path, "    -\n")
    with pytest.raises(SpecError, match="empty value"):
        read_yaml(path)
