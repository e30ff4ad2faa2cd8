"""The grammar of declared sanity checks (caramel addition): YAML, XML, XML inside <comment> (a file
JUBE still reads), and the errors of a bad check, each naming file and line (issue 21)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.errors import SpecError
from caramel.stages.spec.loader import load_one
from caramel.stages.spec.model import Sanity

YAML = """name: b
outpath: runs
step:
  name: train
  do: echo hi
  sanity:
    - {expect: "tokens/s", file: job.out}
    - reject: "NaN|Traceback"
analyser:
  name: a
  analyse: {step: train, file: stdout}
  sanity: {expr: "$tokens_per_s > 0 and loss < 10"}
"""

XML = """<?xml version="1.0"?>
<jube>
  <benchmark name="b" outpath="runs">
    <comment>checked<sanity step="train" reject="Segmentation fault"/></comment>
    <step name="train">
      <do>echo hi</do>
      <sanity expect="tokens/s" file="job.out"/>
    </step>
    <analyser name="a"><analyse step="train"><file>stdout</file></analyse>
      <sanity expr="tokens_per_s &gt; 0"/></analyser>
  </benchmark>
</jube>
"""


def load(tmp_path: Path, text: str, name: str = "b.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return load_one(str(path)), str(path)


def test_yaml_checks_are_read_in_order(tmp_path: Path) -> None:
    bench, _ = load(tmp_path, YAML)
    assert [(s.kind, s.text, s.file) for s in bench.steps["train"].sanity] == [
        ("expect", "tokens/s", "job.out"), ("reject", "NaN|Traceback", "stdout")]
    assert [(s.kind, s.text) for s in bench.analysers["a"].sanity] == [("expr", "$tokens_per_s > 0 and loss < 10")]
    assert bench.steps["train"].sanity[0].where.line == 7


def test_xml_checks_in_the_step_and_in_the_comment(tmp_path: Path) -> None:
    bench, _ = load(tmp_path, XML, "b.xml")
    assert [(s.kind, s.text, s.file) for s in bench.steps["train"].sanity] == [
        ("expect", "tokens/s", "job.out"), ("reject", "Segmentation fault", "stdout")]
    assert bench.analysers["a"].sanity == [Sanity("expr", "tokens_per_s > 0", "", bench.analysers["a"].sanity[0].where)]
    assert bench.comment == "checked"


BAD = [
    ("{expext: x}", "unknown attribute 'expext' of <sanity>", "did you mean 'expect'?"),
    ("{expect: x, reject: y}", "needs exactly one of expect=, reject= or expr=; it has expect= and reject=", ""),
    ("{file: job.out}", "it has none of expect=, reject=, expr=", ""),
    ("{expect: \"(unclosed\"}", "not a valid regular expression: missing ), unterminated subpattern", ""),
    ("{expect: x, file: ../../etc/passwd}", "is not a file of the work folder", ""),
    ("{expr: \"__import__('os').system('x')\"}", "a call is not allowed in a sanity expression", ""),
    ("{expr: \"loss.real > 1\"}", "an attribute (.) is not allowed", ""),
    ("{expr: \"loss >\"}", "not a valid expression", ""),
    ("{expr: \"loss > None\"}", "the constant None is not allowed", ""),
    ("{expr: \"x > 1\", file: stdout}", "reads no file", ""),
    ("just text", "sanity: found 'just text' where a mapping was expected", ""),
]


@pytest.mark.parametrize(("check", "message", "hint"), BAD)
def test_a_bad_check_names_file_and_line(tmp_path: Path, check: str, message: str, hint: str) -> None:
    text = f"name: b\noutpath: runs\nstep:\n  name: train\n  do: echo hi\n  sanity:\n    - {check}\n"
    with pytest.raises(SpecError) as caught:
        load(tmp_path, text)
    assert message in caught.value.message
    assert hint in caught.value.hint
    assert caught.value.where.line == 7 and caught.value.where.file.endswith("b.yaml")


def test_a_comment_check_must_name_an_existing_step(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="names no step") as caught:
        load(tmp_path, XML.replace('step="train" reject', 'step="trian" reject'), "b.xml")
    assert "did you mean 'train'?" in caught.value.hint and caught.value.where.line == 4


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.just("a\x00b"))
def test_any_expression_text_is_read_or_refused_with_a_spec_error(text: str) -> None:
    from caramel.stages.spec.sanity import parse_expression
    from caramel.stages.spec.tree import Node

    try:
        parse_expression(text, Node("sanity"))
    except SpecError as exc:
        assert exc.where is not None
