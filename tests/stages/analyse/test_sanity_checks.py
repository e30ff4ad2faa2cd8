"""The sanity expression evaluator walks the tree of spec/sanity.py's grammar, never `eval`s: its
values are those of the arithmetic and logic it stands for, and what it cannot do is a reason."""

from __future__ import annotations

import ast
import math
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.errors import SpecError
from caramel.stages.analyse.sanity import MISSING, NotEvaluable, check_expression, evaluate
from caramel.stages.spec.model import Sanity
from caramel.stages.spec.sanity import parse_expression
from caramel.stages.spec.tree import Node

VALUES = {"a": 3, "b": 2.5, "c": -7, "name": "gpt"}
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}

# An arithmetic expression as (its text, its value): built with its value, so the oracle is not eval.
leaf = st.one_of(st.integers(-50, 50).map(lambda n: (f"({n})", n)),
                 st.sampled_from(["a", "b", "c"]).map(lambda n: (n, VALUES[n])))
arith = st.recursive(leaf, lambda inner: st.tuples(inner, st.sampled_from(sorted(OPS)), inner).map(
    lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", OPS[t[1]](t[0][1], t[2][1]))), max_leaves=8)
condition = st.tuples(arith, st.sampled_from(sorted(COMPARE)), arith).map(
    lambda t: (f"{t[0][0]} {t[1]} {t[2][0]}", COMPARE[t[1]](t[0][1], t[2][1])))
logic = st.recursive(condition, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(
        lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", (t[0][1] and t[2][1]) if t[1] == "and" else (t[0][1] or t[2][1]))),
    inner.map(lambda t: (f"not ({t[0]})", not t[1]))), max_leaves=6)


def tree(text: str) -> ast.Expression:
    return parse_expression(text, Node("sanity"))


@settings(max_examples=300, deadline=None)
@given(arith)
def test_arithmetic_has_its_value(case) -> None:
    text, value = case
    assert evaluate(tree(text), VALUES) == value


@settings(max_examples=300, deadline=None)
@given(logic)
@pytest.mark.slow
def test_conditions_have_their_truth(case) -> None:
    text, truth = case
    assert bool(evaluate(tree(text), VALUES)) == truth


def test_strings_compare_and_dollar_names_read() -> None:
    assert evaluate(tree("name == 'gpt' and $a > 2 and ${b} < 3"), VALUES) is True


@pytest.mark.parametrize(("text", "why"), [
    ("a / 0 > 1", "division by zero"),
    ("name * 3 == 'x'", "'gpt' is not a number"),
    ("name < 3", "cannot compare 'gpt' with 3"),
    ("missing > 1", "'missing' has no value"),
])
def test_what_cannot_be_evaluated_is_a_reason(text: str, why: str) -> None:
    with pytest.raises(NotEvaluable, match=why):
        evaluate(tree(text), VALUES)


def test_a_huge_power_is_a_float_not_a_memory_bomb() -> None:
    for text in ("9 ** 9 ** 9", "(9 ** 9) ** 99999"):  # at once: a float overflow, which is a reason
        with pytest.raises(NotEvaluable, match="out of range"):
            evaluate(tree(text), {})
    assert evaluate(tree("1 ** 99999999"), {}) == 1.0
    assert math.isclose(evaluate(tree("2 ** 10"), {}), 1024)


def test_check_expression_reasons() -> None:
    values = {"tokens_per_s": 0.0, "loss": float("nan")}
    lookup = lambda name: values.get(name, MISSING)  # noqa: E731
    assert check_expression(Sanity("expr", "tokens_per_s >= 0"), lookup) == ""
    assert check_expression(Sanity("expr", "tokens_per_s > 0"), lookup) == \
        "expr 'tokens_per_s > 0' is false (tokens_per_s=0)"
    assert "is false (loss=nan)" in check_expression(Sanity("expr", "loss < 10"), lookup)
    assert "'acc' has no value" in check_expression(Sanity("expr", "acc > 0.5"), lookup)


@pytest.mark.parametrize("text", ["open('x')", "a.__class__", "a[0]", "[a]", "lambda: 1", "(x := 1)",
                                  "a if b else c", "{a}", "f'{a}'"])
def test_the_grammar_refuses_everything_else(text: str) -> None:
    with pytest.raises(SpecError):
        tree(text)


def test_log_checks_read_inside_the_work_folder_only(tmp_path) -> None:
    import os

    from caramel.stages.analyse.inputs import WPRecord
    from caramel.stages.analyse.sanity import check_file

    work = tmp_path / "000003_run" / "work"
    work.mkdir(parents=True)
    (work / "log_4.txt").write_text("step 1\nFinal loss 0.3\n")
    (tmp_path / "secret.txt").write_text("Final loss\n")
    os.symlink(tmp_path / "secret.txt", work / "link.txt")
    wp = WPRecord(3, "run", 0, (), {"n": "4"}, str(work))
    assert check_file(Sanity("expect", "^Final loss", "log_$n.txt"), wp) == ""
    assert check_file(Sanity("reject", "loss [1-9]", "log_${n}.txt"), wp) == ""
    assert check_file(Sanity("reject", "loss 0", "log_$n.txt"), wp) == \
        "reject /loss 0/ found in log_4.txt of 3_run: 'loss 0'"
    assert check_file(Sanity("expect", "x", "missing.txt"), wp) == "expect /x/: missing.txt of 3_run is missing"
    assert check_file(Sanity("reject", "x", "missing.txt"), wp) == ""
    assert check_file(Sanity("expect", "Final", "link.txt"), wp) == "link.txt is outside the work folder of 3_run"
