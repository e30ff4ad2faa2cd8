"""Every JSON bench reads back is size- and depth-bounded before it is parsed (state/bounded.py): an
oversize or overdeep value is a caramel error naming the file, never a MemoryError, a RecursionError
or a traceback; a cached value over a limit is a miss."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.errors import RunError
from caramel.stages.analyse.cache import Damaged, decode_group
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Benchmark
from caramel.stages.state import bounded
from caramel.stages.state.rows import RunInfo
from caramel.stages.state.store import Store

DEEP = "[" * 100_000 + "]" * 100_000  # json.loads alone: RecursionError


def test_size_and_depth_limits() -> None:
    assert bounded.loads('{"a": [1, {"b": []}]}', "x") == {"a": [1, {"b": []}]}
    with pytest.raises(RunError, match=r"^f\.json: JSON nested more than 64 deep"):
        bounded.loads(DEEP, "f.json")
    with pytest.raises(bounded.OverLimit, match=r"f\.json: 101 bytes of JSON, over the 100 bytes bench reads back"):
        bounded.loads('"' + "x" * 99 + '"', "f.json", max_bytes=100)
    with pytest.raises(bounded.OverLimit, match="nested too deeply"):
        bounded.loads("[" * 100_000, "f.json")  # brackets that never close: the parser's own depth


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"a": "[" * 500 + '\\"' + "{" * 500, "b": ["]]]"]})
    assert bounded.depth(text.encode(), 64) == 2
    assert bounded.loads(text, "x")["b"] == ["]]]"]


def test_strings_holding_brackets_beside_other_strings() -> None:
    """Two quotes side by side are dropped in one pass, also where one string ends and the next begins
    (`"[""]"`): the brackets inside either string still do not count, those outside still do."""
    for value in (["[", "]"], {"a[": "]]"}, {"n": "n[1-16]", "m": ["x", "[[[", "", "]"]}, [["", "{"], "}", [[]]]):
        text = json.dumps(value).encode()
        assert bounded.depth(text, 64) == bounded.depth(json.dumps(json.loads(text), indent=1).encode(), 64)
    assert bounded.depth(b'["[", "]", [["{"], "}"]]', 64) == 3
    assert bounded.depth(b'[' + b'"[", ' * 10_000 + b'[[]]]', 64) == 3


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=30))
def test_depth_is_the_nesting_of_the_value(value) -> None:
    def nesting(v) -> int:
        if isinstance(v, list):
            return 1 + max(map(nesting, v), default=0)
        if isinstance(v, dict):
            return 1 + max(map(nesting, v.values()), default=0)
        return 0
    assert bounded.depth(json.dumps(value).encode(), 1000) == nesting(value)


def _store(tmp_path: Path) -> Store:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return Store.create(str(run_dir), RunInfo(1, "b", "f.xml", str(tmp_path), str(run_dir)),
                        Benchmark("b", "out"), [(0, "s", 0, (), "000000_s", Params({"n": "1"}))])


def _set(store: Store, sql: str, value: str) -> None:
    with closing(sqlite3.connect(store.path)) as db, db:
        db.execute(sql, (value,))


def test_an_overdeep_stored_model_is_an_error_naming_the_run_state(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _set(store, "UPDATE runs SET model=?", '{"name": ' + DEEP + "}")
    with pytest.raises(RunError, match=f"the benchmark stored in {store.path} cannot be read: .*nested more than 64"):
        store.model()


@pytest.mark.parametrize(("sql", "read"), [
    ("UPDATE runs SET tags=?", lambda s: s.info()),
    ("UPDATE workpackages SET params=?", lambda s: s.params(0)),
    ("UPDATE workpackages SET params=?", lambda s: s.all_params()),
    ("UPDATE workpackages SET env=?", lambda s: s.env(0)),
    ("UPDATE workpackages SET wait_files=?", lambda s: s.workpackages()),
])
def test_an_overdeep_run_record_field_is_a_run_error(tmp_path: Path, sql: str, read) -> None:
    store = _store(tmp_path)
    _set(store, sql, DEEP)
    with pytest.raises(RunError):
        read(store)


def test_tags_and_settings_of_the_wrong_type_are_a_damaged_run_state(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _set(store, "UPDATE runs SET tags=?", '{"a": 1}')
    with pytest.raises(RunError, match=f"the run state {store.path} is damaged"):
        store.info()


def test_an_overdeep_cached_group_is_a_miss() -> None:
    with pytest.raises(Damaged):
        decode_group(DEEP, None, {})


def test_an_export_line_over_the_size_limit_is_refused_without_reading_it_whole(tmp_path: Path, monkeypatch,
                                                                                  capsys) -> None:
    from caramel.cli.main import main

    monkeypatch.setattr(bounded, "MAX_BYTES", 1000)
    (tmp_path / "big.jsonl").write_text('{"run": "' + "x" * 5000)
    assert main(["import", str(tmp_path / "big.jsonl"), "--history", str(tmp_path / "h.db")]) == 2
    assert f"{tmp_path / 'big.jsonl'}:1: not a bench export: a line of more than" in capsys.readouterr().err
