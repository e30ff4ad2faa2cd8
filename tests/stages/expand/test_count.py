"""Counting workpackages before making them (issue 12): the count is what planning makes, and a
plan over the limit is refused naming the sets, parameters and sizes."""

from __future__ import annotations

import textwrap

import pytest

from caramel.errors import ExpandError
from caramel.stages.expand.count import count_workpackages
from caramel.stages.expand.plan import check_steps, make_plan
from caramel.stages.spec.loader import load_one


def load(tmp_path, text: str):
    path = tmp_path / "b.yaml"
    path.write_text(textwrap.dedent(text))
    return load_one(str(path))


SPACE = """\
    name: b
    outpath: out
    parameterset:
      - name: p
        parameter:
          - {name: a, _: "1,2,3,4"}
          - {name: b, _: "x,y,z,w"}
          - {name: c, _: "10,20,30"}
          - {name: d, mode: python, _: "$c * 2"}
        zip: {names: "a,b"}
        exclude: {if: "$c > 15"}
      - name: q
        parameter: {name: e, _: "1,2"}
    step:
      - {name: first, use: p, iterations: 2, do: echo $a}
      - {name: second, use: [p, q], depend: first, do: echo $e}
    """


def test_count_accounts_for_zips_single_parameter_excludes_iterations_and_parents(tmp_path):
    bench = load(tmp_path, SPACE)
    counts = count_workpackages(bench, check_steps(bench))
    # first: zip(a,b) 4 x c 1 (10 only: 20, 30 excluded) x 2 iterations; second: 8 parents x e 2
    assert [(c.step, c.total) for c in counts] == [("first", 8), ("second", 16)]
    assert len(make_plan(bench, run_id=0).workpackages) == 8 + 16


def test_over_the_limit_is_refused_naming_sets_parameters_and_sizes(tmp_path):
    bench = load(tmp_path, SPACE)
    with pytest.raises(ExpandError) as caught:
        make_plan(bench, run_id=0, max_workpackages=20)
    assert caught.value.message == (
        "benchmark 'b' would make 24 workpackages, more than the limit of 20; step 'second' alone makes 16: "
        "workpackages of first (8) x parameterset 'q' e (2)")
    assert len(make_plan(bench, run_id=0, max_workpackages=24).workpackages) == 24


def test_a_parameter_zipped_in_two_used_sets_is_counted_as_expand_makes_it():
    """count.py takes a parameter's zip as expand.space does (the last zip naming it), so a count
    never disagrees with the plan."""
    from caramel.stages.expand.count import _zip_members
    from caramel.stages.spec.model import Parameter

    new = {name: Parameter(name, "1,2") for name in "abc"}
    assert _zip_members("b", [["a", "b"], ["b", "c"]], new) == ["b", "c"]
