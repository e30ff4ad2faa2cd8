"""The closed vocabularies (caramel.vocabulary.Word): each word is its text wherever a string goes, so
what run records, history files and exports hold stays as it was before the words were enums."""

from __future__ import annotations

import json
import sqlite3

import pytest

from caramel.consumers.history.methodology import Verdict
from caramel.stages.engine.script import Status
from caramel.stages.spec.model import FileAction, ParameterMode, TableOutput, UpdateMode
from caramel.vocabulary import (
    STATES,
    Direction,
    JobStatus,
    Role,
    VerdictWord,
    WaitKind,
    Word,
    WpState,
)

VOCABULARIES = [WpState, WaitKind, Role, JobStatus, VerdictWord, Direction, Status, ParameterMode, UpdateMode,
                FileAction, TableOutput, Verdict]


@pytest.mark.parametrize("words", VOCABULARIES, ids=lambda words: words.__name__)
def test_a_word_is_its_text(words: type[Word]) -> None:
    for word in words:
        text = word.value
        assert isinstance(word, str) and word == text and hash(word) == hash(text)
        assert {text: 1}[word] == 1 and {word: 1}[text] == 1
        assert (str(word), f"{word}", f"{word:>3}", repr(word)) == (text, text, f"{text:>3}", repr(text))
        assert json.dumps({word: [word]}) == json.dumps({text: [text]})
        assert words(text) is word


def test_a_word_goes_into_sqlite_as_its_text() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (state TEXT)")
    db.execute("INSERT INTO t VALUES (?)", (WpState.DONE,))
    assert db.execute("SELECT state, typeof(state) FROM t WHERE state = 'done'").fetchall() == [("done", "text")]


def test_bench_status_shows_the_states_in_their_order_as_texts() -> None:
    assert STATES == ("open", "running", "waiting", "done", "failed", "cancelled")
    assert all(type(state) is str for state in STATES)


def test_a_run_record_row_holds_words_whatever_it_was_given() -> None:
    from caramel.stages.state.rows import CommandRow, WpRow

    row = WpRow(1, "s", 0, (), "000001_s", state="waiting", wait_kind="file")
    assert row.state is WpState.WAITING and row.wait_kind is WaitKind.FILE
    command = CommandRow(1, 1, 0, 0, "shared", "true", ".", 0, None, None)
    assert command.role is Role.SHARED
    with pytest.raises(ValueError):
        WpRow(1, "s", 0, (), "d", state="finished")
