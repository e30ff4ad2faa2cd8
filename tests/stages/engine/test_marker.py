"""The engine's channel parser (engine.marker.parse_marker): strict, pure, a Marker or a ChannelError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.stages.engine.marker import ChannelError, Marker, MarkerKind, marker_line, parse_marker

SECRET = "0123456789abcdef"


@given(st.sampled_from(list(MarkerKind)), st.lists(st.integers(0, 2**31), min_size=3, max_size=3))
def test_every_marker_reads_back(kind: MarkerKind, numbers: list[int]) -> None:
    numbers = numbers[:kind.arity]
    assert parse_marker(marker_line(SECRET, kind, *numbers), SECRET) == Marker(kind, tuple(numbers))


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_any_text_is_a_marker_or_a_channel_error(line: str) -> None:
    try:
        marker = parse_marker(line, SECRET)
    except ChannelError:
        return
    assert line.startswith(f"@caramel {SECRET} ") and isinstance(marker, Marker)


@given(st.sampled_from(list(MarkerKind)), st.text(min_size=1, max_size=20))
def test_a_marker_with_another_secret_or_garbage_numbers_is_refused(kind: MarkerKind, noise: str) -> None:
    with pytest.raises(ChannelError):
        parse_marker(marker_line("another", kind, *([1] * kind.arity)), SECRET)
    if not (noise.isascii() and noise.isdigit()) or len(noise) > 10:
        with pytest.raises(ChannelError):
            parse_marker(" ".join(["@caramel", SECRET, kind.value, *([noise] * max(1, kind.arity))]), SECRET)


@pytest.mark.parametrize("line", ["", "@caramel", f"@caramel {SECRET}", f"@caramel {SECRET} EXIT",
                                  f"@caramel {SECRET} EXIT 0 0", f"@caramel {SECRET}  EXIT 0", f"@caramel {SECRET} EXIT ٣",
                                  f"@caramel {SECRET} EXIT -1", f"@caramel {SECRET} ENDENV", f"@caramel {SECRET} EXIT 0 ",
                                  f"@caramel {SECRET} B 99999999999", "@caramel B 0", f"@caramel {SECRET} B " + "1" * 300])
def test_strict(line: str) -> None:
    with pytest.raises(ChannelError):
        parse_marker(line, SECRET)
