import pytest

from caramel.stages.spec.tags import TagSyntaxError, tag_matches


@pytest.mark.parametrize(("expr", "tags", "expected"), [
    (None, set(), True),
    ("A100", {"A100"}, True),
    ("A100", {"MI250"}, False),
    ("!MI250", {"A100"}, True),
    ("!GH200|!MI250", {"MI250"}, True),  # CARAML's always-true guard
    ("GH200|MI250", {"A100"}, False),
    ("MI250+!container", {"MI250", "container"}, False),
    ("(H100|MI250)+container", {"MI250", "container"}, True),
    ("!(JEDI|MI250|GH200|H100)+!container", {"A100"}, True),
    ("!(JEDI|MI250|GH200|H100)+!container", {"H100"}, False),
    ("a|b+c", {"a"}, True),  # + binds tighter than |
    ("a|b+c", {"b"}, False),
    ("800M", {"800M"}, True),  # tags may start with a digit
])
def test_tag_expressions(expr, tags, expected):
    assert tag_matches(expr, tags) is expected


@pytest.mark.parametrize("expr", ["a+", "(a|b", "a,b", "a)", "|"])
def test_malformed_expressions_are_errors(expr):
    with pytest.raises(TagSyntaxError):
        tag_matches(expr, {"a"})
