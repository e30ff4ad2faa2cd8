"""A benchmark's `repeat: N|auto` (spec.limits.parse_repeat, issue 34): what it accepts, what
it refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.errors import Location, SpecError
from caramel.stages.spec.limits import parse_repeat
from caramel.stages.spec.model import Repeat

WHERE = Location("bench.yaml", 3)


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["", " ", "\t"]))
def test_a_whole_number_of_at_least_one_is_that_many_repeats(times: int, pad: str) -> None:
    assert parse_repeat(f"{pad}{times}{pad}", WHERE) == Repeat(times=times)


@given(st.sampled_from(["auto", "AUTO", " Auto "]))
def test_auto_in_any_case(text: str) -> None:
    assert parse_repeat(text, WHERE) == Repeat(auto=True)


@given(
    st.text().filter(
        lambda t: (
            not (t.strip().isdecimal() and int(t.strip()) >= 1) and t.strip().lower() != "auto"
        )
    )
)
def test_anything_else_is_an_error_naming_the_place_and_what_is_expected(text: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_repeat(text, WHERE)
    assert caught.value.where == WHERE
    assert "neither a whole number of at least 1 nor 'auto'" in str(caught.value)


def test_repeat_is_text_as_written() -> None:
    assert str(Repeat(auto=True)) == "auto" and str(Repeat(times=4)) == "4"
