"""Bad `call:` steps are refused while the file is read, naming the file and line, before anything runs;
the target's form and a function's return are checked by properties (spec/call.py, engine/call_payload.py)."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.run_bench import bench, isolated_env

from caramel.errors import Location, SpecError
from caramel.payloads.call import BadReturn, figures_of
from caramel.stages.spec import model as m
from caramel.stages.spec.call import read_call
from caramel.stages.spec.tree import Node

FUNCTIONS = '''
def measure(size: int) -> dict:
    return {"rate": size}


def listing(size: int) -> list:
    return [size]


def undeclared(size: int):
    return {"rate": size}


def declared(size: int):
    return {"rate": size}


declared.caramel_figures = {"rate": ("items/s", "higher")}
'''

HEAD = """name: bad
outpath: runs
parameterset:
  - name: p
    parameter: [{name: size, type: int, _: "1,2"}]
step:
  - name: s
    use: p
"""


def run_bad(tmp_path: Path, step_lines: str):
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "bad.yaml").write_text(HEAD + step_lines)
    return bench("run", "bad.yaml", cwd=tmp_path, env=isolated_env(tmp_path), timeout=120)


@pytest.mark.parametrize(("lines", "message", "line", "hint"), [
    ("    call: functoins:measure\n    figure: [{name: rate}]\n", "call 'functoins:measure': no module named 'functoins'",
     9, "did you mean 'functions'?"),
    ("    call: functions:meausre\n    figure: [{name: rate}]\n", "call 'functions:meausre': functions has no 'meausre'",
     9, "did you mean 'measure'?"),
    ("    call: functions:listing\n    figure: [{name: rate}]\n",
     "call 'functions:listing' is declared to return list, not a mapping", 9, "return a dict"),
    ("    call: functions:undeclared\n", "step 's' declares no figure, and functions:undeclared has no caramel_figures",
     9, "list the figures"),
    ("    do: echo hi\n    call: functions:measure\n    figure: [{name: rate}]\n", "step 's' has both do: and call:",
     9, "put the do's in a step of their own"),
    ("    call: functions\n", "call 'functions' of step 's' is not package.module:function", 9, "package.module:function"),
    ("    do: echo hi\n    figure: [{name: rate}]\n", "step 's' declares figures but calls no function", 10, "<figure>"),
])
def test_a_bad_call_step_is_an_error_naming_file_and_line_and_nothing_runs(tmp_path, lines, message, line, hint):
    done = run_bad(tmp_path, lines)
    assert done.returncode != 0
    assert f"bad.yaml:{line}: {message}" in done.stderr, done.stderr
    assert hint in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()  # nothing was submitted: no run folder at all


def test_the_function_may_declare_its_own_figures(tmp_path):
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "ok.yaml").write_text(HEAD + "    call: functions:declared\n")
    from caramel.stages.spec.loader import load

    (bench_model,) = load(str(tmp_path / "ok.yaml"))
    pattern, energy, status = bench_model.patternsets["s_figures"].patterns
    assert (pattern.name, pattern.unit, pattern.direction) == ("rate", "items/s", "higher")
    assert (energy.name, energy.unit, energy.direction, status.name) == ("energy_wh", "Wh", "lower", "energy_status")
    assert [c.name for c in bench_model.results[0].tables[0].columns] == ["size", "rate", "energy_wh", "energy_status"]


@given(st.text(alphabet=string.ascii_letters + string.digits + "_.:- /", max_size=40))
def test_a_target_is_module_colon_function_or_a_spec_error(text):
    step = m.Step("s")
    try:
        read_call(Node("call", text=text, where=Location("f.yaml", 3)), step)
    except SpecError as exc:
        assert exc.where == Location("f.yaml", 3)
        return
    module, _, function = step.call.partition(":")
    assert module and function and ":" not in function and " " not in step.call


figure_values = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5))


@given(st.dictionaries(st.text(min_size=1, max_size=8), figure_values, max_size=5))
def test_a_mapping_of_names_to_numbers_or_texts_is_accepted_as_it_is(figures):
    assert figures_of(figures, "m:f") == figures


@given(st.one_of(st.lists(st.integers(), max_size=3), st.integers(), st.none(), st.text(max_size=3),
                 st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=3),
                 st.dictionaries(st.text(max_size=3), st.one_of(st.lists(st.integers()), st.none(), st.booleans()),
                                 min_size=1, max_size=3)))
def test_anything_else_is_a_bad_return_naming_the_function(value):
    with pytest.raises(BadReturn, match="m:f"):
        figures_of(value, "m:f")


@pytest.mark.parametrize("no_eval", [False, True])
@pytest.mark.parametrize(("number", "declared", "shown"), [
    (1, '{"rate": 5}', "'rate': 5"),
    (2, '{"rate": None}', "'rate': None"),
    (3, '{"rate": ("s", "lower", "x")}', "'rate': ('s', 'lower', 'x')"),
    (4, '{"rate": {"unit": "s"}}', "'rate': {'unit': 's'}"),  # it read as the unit "unit"
    (5, '{"rate": ()}', "'rate': ()"),
    (6, '{"rate": 1.5}', "'rate': 1.5"),
])
def test_a_caramel_figures_of_a_wrong_shape_is_an_error_naming_file_and_line(tmp_path, no_eval, number,
                                                                          declared, shown):
    """Each was a traceback (an int or None is not iterable, three items do not unpack) or read
    silently as something else; with --no-eval the literal is read from the source, the same error."""
    module = f"shaped{number}_{int(no_eval)}"  # a name of its own: the import stays in sys.modules
    (tmp_path / f"{module}.py").write_text(f"def f(size: int):\n    return {{}}\n\n\nf.caramel_figures = {declared}\n")
    (tmp_path / "bad.yaml").write_text(HEAD + f"    call: {module}:f\n")
    from caramel.stages.spec.loader import load

    with pytest.raises(SpecError) as caught:
        load(str(tmp_path / "bad.yaml"), no_eval=no_eval)
    text = str(caught.value)
    assert f"bad.yaml:9: {module}:f.caramel_figures: {shown} is not a unit or (unit, direction)" in text


@pytest.mark.parametrize(("figures", "message"), [
    (["rate"], "caramel.sweep: figures is a list, not a mapping of figure names to units"),
    ({"rate": 5}, "caramel.sweep: figures: 'rate': 5 is not a unit or (unit, direction)"),
    ({"rate": ("a", "b", "c")}, "caramel.sweep: figures: 'rate': ('a', 'b', 'c') is not a unit"),
    ({"rate": {"unit": "s"}}, "caramel.sweep: figures: 'rate': {'unit': 's'} is not a unit"),
])
def test_a_sweeps_figures_of_a_wrong_shape_is_an_error(figures, message):
    """caramel.sweep's `figures` take the shapes `caramel_figures` takes: a list was an
    AttributeError, a number or a mapping became a unit, three items lost the third."""
    from caramel.sweep import benchmark_text

    with pytest.raises(SpecError, match=re.escape(message)):
        benchmark_text("f", "m:f", {"n": [1]}, figures)
