"""Derived (python-mode) patterns: JUBE's scripting_pattern example and CARAML's throughput formulas."""

import math

from caramel.errors import Location
from caramel.stages.analyse.derived import evaluate_derived
from caramel.stages.spec.model import Pattern


def p(name, text, type_="float", mode="python", default=None):
    return Pattern(name, text, type_, mode, default=default, where=Location("bench.xml", 7))


def test_scripting_pattern_example():
    derived = [p("dep_pat", "$value_pat+$value", "int"), p("missing_dep_pat", "$missing_pat*$value", "int"),
               p("missing_def_dep_pat", "$missing_pat_def*$value", "int")]
    values = {"value_pat": 2, "missing_pat_def": 0}
    out = evaluate_derived(derived, {"value": "2"}, values, 0)
    assert out["dep_pat"] == 4
    assert math.isnan(out["missing_dep_pat"])
    assert out["missing_def_dep_pat"] == 0


def test_chained_derived_patterns_in_dependency_order():
    derived = [p("throughput_in_time", "(20000000/$tokens_per_second)"),
               p("tokens_per_second", "(1.0/$elp_pat_avg)*$global_batch_size*$sequence_length")]
    out = evaluate_derived(derived, {"global_batch_size": "32", "sequence_length": "2048"},
                           {"elp_pat_avg": 0.5}, 0)
    assert out["tokens_per_second"] == 131072.0
    assert out["throughput_in_time"] == 20000000 / 131072.0


def test_failure_with_all_inputs_is_reported_with_expression_and_workpackage():
    problems = []
    out = evaluate_derived([p("ratio", "$a/$b")], {}, {"a": 1, "b": 0}, 17, problems)
    assert math.isnan(out["ratio"])
    (problem,) = problems
    assert problem.expression == "1/0" and problem.wp_id == 17 and "ZeroDivisionError" in problem.message


def test_missing_input_is_silent_and_uses_default_or_empty():
    problems = []
    out = evaluate_derived([p("a", "$nothing*2", default="-1"), p("s", "'$nothing'.upper()+$x", "string")],
                           {}, {}, 3, problems)
    assert out == {"a": -1.0, "s": ""}
    assert problems == []


def test_text_and_shell_modes():
    out = evaluate_derived([p("label", "$size-$count", "string", mode="text"), p("n", "echo $count", "int", "shell")],
                           {"size": "800M"}, {"count": 3}, 0)
    assert out == {"label": "800M-3", "n": 3}
