"""Targets files (issue 21): references per system with asymmetric tolerances, sd targets, the old
flat form, and errors that name the file and the line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from caramel.consumers.history.targets import ANY_SYSTEM, Reference, read_targets
from caramel.errors import RunError

TWO_SYSTEMS = """\
systems:
  JEDI:
    gpt: {value: 1200, lower: -5%, upper: +20%, max_sd: 3%}
    mm:
      GFLOP/s: [2.5, -0.05, 0.2]
      time: {value: 10, max: 12}
      max_sd: 5
  local:
    gpt: 100
"""


def test_two_systems_with_asymmetric_tolerances(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TWO_SYSTEMS)
    targets = read_targets(str(path))
    assert set(targets.systems) == {"JEDI", "local"}
    system, entries = targets.for_system(["JEDI", "other-tag"])
    assert system == "JEDI" and [e.name for e in entries] == ["gpt", "mm"]
    gpt, mm = entries
    assert gpt.figures[""] == Reference(1200, -0.05, 0.2) and gpt.max_sd == 3
    assert gpt.figures[""].bounds("higher", 5) == pytest.approx((1140, 1440))
    assert mm.figures["GFLOP/s"].bounds("higher", 5) == pytest.approx((2.375, 3.0))
    assert mm.figures["time"].bounds("lower", 5) == (-math.inf, 12) and mm.max_sd == 5
    assert mm.figure_lines["time"].line == 6
    assert targets.for_system(["A100"]) == (None, [])
    # a value alone: the default tolerance on the side where the figure gets worse only
    local = targets.for_system(["local"])[1][0].figures[""]
    assert local.bounds("higher", 5) == pytest.approx((95, math.inf))
    assert local.bounds("lower", 5) == pytest.approx((-math.inf, 105))


def test_the_flat_form_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"fast": 12.5, "gpt/Tokens/second": {"value": 1200, "threshold": 10}}))
    targets = read_targets(str(path))
    system, entries = targets.for_system(["local"])
    assert system == ANY_SYSTEM and not targets.systems
    assert entries[1].figures[""].bounds("higher", 5) == pytest.approx((1080, math.inf))


@pytest.mark.parametrize(("text", "line", "says"), [
    ("systems:\n  local:\n    gpt: {value: 1, lowr: -5%}\n", 3, "unknown key 'lowr'"),
    ("systems:\n  local:\n    gpt: [1, '-5 percent']\n", 3, "is not a number or a percentage"),
    ("systems:\n  local:\n    gpt:\n      tokens: fast\n", 4, "figure 'tokens': 'fast' is not a reference"),
    ("systems:\n  local:\n    gpt: {value: 1, max_sd: lots}\n", 3, "max_sd 'lots' is not a percentage"),
    ("systems:\n  local: 3\n", 2, "expected a mapping of benchmarks"),
    ("gpt: [1, 2\n", 2, "not a YAML file of targets"),
])
def test_bad_entries_name_file_and_line(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(RunError) as caught:
        read_targets(str(path))
    assert says in str(caught.value) and f"{path}:{line}" in str(caught.value)


def test_bad_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{\n "gpt": 1,\n "x": }\n')
    with pytest.raises(RunError) as caught:
        read_targets(str(path))
    assert f"{path}:3" in str(caught.value)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(st.floats(1e-3, 1e6), st.floats(-0.99, 0), st.floats(0, 10), st.booleans())
@example(1.0, -5e-324, 0.0, False)  # json.dumps writes -5e-324 (no dot): YAML 1.1 alone reads it as text
@example(1e5, -0.05, 1e-7, False)
def test_relative_bounds_as_fractions_or_percentages(tmp_path: Path, value: float, lower: float, upper: float,
                                                     percent: bool) -> None:
    spec = [value, f"{lower * 100!r}%", f"+{upper * 100!r}%"] if percent else [value, lower, upper]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"systems": {"local": {"gpt": spec}}}))
    low, high = read_targets(str(path)).entries[0].figures[""].bounds("higher", 5)
    assert low == pytest.approx(value * (1 + lower)) and high == pytest.approx(value * (1 + upper))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=80)
@given(st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children,
                                                                                      max_size=3), max_leaves=8))
def test_any_document_is_targets_or_a_run_error(tmp_path: Path, doc) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(json.dumps({"systems": {"local": doc}} if isinstance(doc, dict) else doc))
    try:
        read_targets(str(path))
    except RunError as exc:
        assert str(path) in str(exc)


def test_keys_that_are_not_text(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("systems:\n  1:\n    2: 3\n")
    assert read_targets(str(path)).entries[0].name == "2"
