"""The model stored with a run: typed JSON that reads back equal, and refuses what is not it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caramel.adapters.systems import find_system, system_names, with_system
from caramel.stages.spec.loader import load
from caramel.stages.state.codec import CodecError, decode_model, encode_model

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "benchmarks").glob("*.*")) + sorted((ROOT / "tests" / "e2e" / "data").glob("*.*"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_benchmark_reads_back_equal(path: Path) -> None:
    tags = {"local", "117M"} if path.name in ("llm.yaml", "resnet50.xml") else set()
    for bench in load(str(path), tags):
        text = encode_model(bench)
        assert "pickle" not in text and decode_model(text) == bench


def test_a_benchmark_with_its_system_reads_back_equal() -> None:
    name = sorted(system_names())[0]
    bench = with_system(load(str(ROOT / "benchmarks" / "quickstart.yaml"))[0], find_system({name}))
    back = decode_model(encode_model(bench))
    assert back == bench and type(back.system).__name__ == "System"


@pytest.mark.parametrize("text", [
    "not json", "[]", '{"name": 1, "outpath": "x"}', '{"name": "b", "outpath": "x", "evil": 1}',
    '{"name": "b", "outpath": "x", "system": {"__class__": "os.system"}}',
    '{"name": "b", "outpath": "x", "steps": {"s": {"name": "s", "dos": [{"command": ["rm"]}]}}}',
    '{"outpath": "x"}',
])
def test_what_is_not_a_stored_model_is_refused(text: str) -> None:
    with pytest.raises(CodecError):
        decode_model(text)


def test_missing_fields_of_an_older_model_take_their_defaults() -> None:
    assert decode_model(json.dumps({"name": "b", "outpath": "x"})).steps == {}


def test_a_run_stored_before_a_field_was_renamed_reads_back() -> None:
    """FileEntry.kind is now `action`, Table.kind `output`, Use.from_file is gone: a run stored before
    still continues."""
    data = json.loads(encode_model(load(str(ROOT / "benchmarks" / "quickstart.yaml"))[0]))
    data["filesets"] = {"f": {"name": "f", "entries": [{"kind": "copy", "path": "a.txt"}]}}
    data["steps"] = {"s": {"name": "s", "uses": [{"names": ["p@x.xml"], "from_file": "x.xml"}]}}
    data["results"] = [{"tables": [{"name": "t", "kind": "database"}]}]
    bench = decode_model(json.dumps(data))
    assert bench.filesets["f"].entries[0].action == "copy"
    assert bench.results[0].tables[0].output == "database"
    assert bench.steps["s"].uses[0].names == ["p@x.xml"]


def test_the_words_of_a_stored_model_read_back_as_their_enums() -> None:
    """A closed vocabulary is stored as its text (as before it was an enum) and read back as the enum's
    member; a text that is none of its words is refused."""
    from caramel.stages.spec.model import FileAction, ParameterMode, TableOutput, UpdateMode

    data = json.loads(encode_model(load(str(ROOT / "benchmarks" / "quickstart.yaml"))[0]))
    data["filesets"] = {"f": {"name": "f", "entries": [{"action": "link", "path": "a.txt"}]}}
    data["parametersets"] = {"p": {"name": "p", "parameters": [
        {"name": "x", "value": "1+1", "mode": "python", "update_mode": "step"}]}}
    data["results"] = [{"tables": [{"name": "t", "output": "syslog"}]}]
    assert '"mode":"python"' in json.dumps(data, separators=(",", ":"))
    bench = decode_model(json.dumps(data))
    param = bench.parametersets["p"].parameters[0]
    assert (param.mode, param.update_mode) == (ParameterMode.PYTHON, UpdateMode.STEP)
    assert bench.filesets["f"].entries[0].action is FileAction.LINK
    assert bench.results[0].tables[0].output is TableOutput.SYSLOG
    assert json.loads(encode_model(bench))["parametersets"]["p"]["parameters"][0]["mode"] == "python"
    data["results"] = [{"tables": [{"name": "t", "output": "sylog"}]}]
    with pytest.raises(CodecError, match="'sylog' is not one of 'table', 'database', 'syslog'"):
        decode_model(json.dumps(data))


def test_each_hint_is_looked_up_once_not_once_per_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's engine decodes its stored model as it starts (about 1,900 values for llm.yaml): each type
    hint's reader is made once, so decoding the model again asks typing nothing (it cost `bench run`
    10 ms of CPU when every value looked its hint up again)."""
    import typing

    bench = with_system(load(str(ROOT / "benchmarks" / "llm.yaml"), {"local", "117M"})[0], find_system({"local"}))
    text = encode_model(bench)
    assert decode_model(text) == bench  # the readers made
    asked = []
    real = typing.get_origin
    monkeypatch.setattr(typing, "get_origin", lambda hint: asked.append(hint) or real(hint))
    assert decode_model(text) == bench
    assert asked == []


def test_errors_name_the_value_after_a_good_read() -> None:
    """The cached readers still say where a value is wrong, on a model that read well before."""
    bench = load(str(ROOT / "benchmarks" / "quickstart.yaml"))[0]
    data = json.loads(encode_model(bench))
    decode_model(json.dumps(data))
    step = next(iter(data["steps"]))
    data["steps"][step]["iterations"] = "two"
    with pytest.raises(CodecError, match=rf"Benchmark\.steps\.{step}\.iterations: a int was expected, not str"):
        decode_model(json.dumps(data))
