"""spec.tagscan: the tag names a tag expression mentions, and the refusal of a tag that selects nothing.

The names of an expression are JUBE's: jube/util/util.py, `valid_tags`, takes the words that
`re.split('[()|+!^]', expression.replace(' ', ''))` leaves.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.errors import SpecError
from caramel.stages.spec.tags import tag_matches
from caramel.stages.spec.tagscan import check_given_tags, tag_names, tags_in
from caramel.stages.spec.tree import Node


def jube_names(expr: str) -> set[str]:
    """jube/util/util.py, valid_tags: the words between the operators of a space-free expression."""
    return {word for word in re.split("[()|+!^]", expr.replace(" ", "")) if word}


@pytest.mark.parametrize(("expr", "names"), [
    ("!(JEDI|MI250|GH200|H100)+!container", {"JEDI", "MI250", "GH200", "H100", "container"}),  # CARAML's
    ("117M|800M", {"117M", "800M"}),
    ("a ^ b", {"a", "b"}),
    ("", set()),
])
def test_the_names_of_an_expression_are_jubes(expr, names):
    assert tag_names(expr) == names == jube_names(expr)


NAME = st.from_regex(r"[A-Za-z0-9_.-]{1,8}", fullmatch=True)


@st.composite
def expressions(draw, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(NAME)
    kind = draw(st.sampled_from(["not", "and", "or", "group"]))
    if kind == "not":
        return "!" + draw(expressions(depth - 1))
    if kind == "group":
        return "(" + draw(expressions(depth - 1)) + ")"
    op = "+" if kind == "and" else "|"
    return draw(expressions(depth - 1)) + op + draw(expressions(depth - 1))


@given(expressions())
def test_every_name_an_expression_reads_is_one_it_mentions(expr):
    names = tag_names(expr)
    assert names == jube_names(expr)
    # whatever the tags, the expression's truth depends on the tags it mentions only
    assert tag_matches(expr, names | {"unrelated"}) == tag_matches(expr, names)
    assert tag_matches(expr, set()) == tag_matches(expr, {"unrelated"})


def test_tags_in_reads_inactive_elements_check_tags_selection_and_declarations():
    root = Node("jube", children=[
        Node("selection", children=[Node("tag", text="picked, also")]),
        Node("tags", children=[Node("tag", {"name": "nightly"}, "the nightly copy"),
                               Node("check_tags", text="117M|800M")]),
        Node("benchmark", children=[Node("parameterset", {"tag": "A100+!container"},
                                         children=[Node("parameter", {"tag": "deep"})])]),
    ])
    assert tags_in(root) == {"picked", "also", "nightly", "117M", "800M", "A100", "container", "deep"}


def test_known_and_system_tags_pass():
    check_given_tags(["117M", "local"], {"117M"}, {"local"}, None)


def test_every_unknown_tag_is_named_with_its_likely_meaning():
    with pytest.raises(SpecError) as caught:
        check_given_tags(["117m", "A10", "zzzz"], {"117M"}, {"A100", "local"}, None)
    text = str(caught.value)
    assert "tags '117m', 'A10', 'zzzz' select nothing" in text
    assert "'117m': tags are case-sensitive: did you mean '117M'?" in text
    assert "'A10': did you mean 'A100'?" in text
    assert "'zzzz': known tags: 117M, A100, local" in text
