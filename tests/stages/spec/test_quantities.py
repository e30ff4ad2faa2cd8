"""A unit's dimension and scale (spec/quantities.py): pint reads it after caramel's rules for the
words ML benchmarks print. The expected factors are pint's own definitions (pint/default_en.txt:
`byte = 8 * bit`, `watt_hour = watt * hour`, the SI prefixes `giga- = 1e9`, `tera- = 1e12`,
`milli- = 1e-3`)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.stages.spec.quantities import (
    COUNTS,
    UnitMismatch,
    conversion,
    parse_unit,
    same_quantity,
)


@pytest.mark.parametrize(
    "a, b",
    [
        ("tokens/s", "tok/s"),
        ("tok/s", "tokens/sec"),
        ("tokens/s", "tokens per second"),
        ("samples_per_second", "samples/s"),
        ("img/s", "images/sec"),
        ("tok_per_s_per_gpu", "tokens/s/GPU"),
        ("GFLOPS", "GFLOP/s"),
        ("s", "sec"),
    ],
)
def test_spellings_of_one_unit_are_the_same_unit(a, b):
    assert conversion(a, b) == 1.0 and parse_unit(a).canonical == parse_unit(b).canonical


@pytest.mark.parametrize(
    "have, want, factor",
    [
        ("s", "ms", 1e3),
        ("ms", "us", 1e3),
        ("µs", "ns", 1e3),
        ("min", "s", 60.0),
        ("h", "s", 3600.0),
        ("GB/s", "MB/s", 1e3),
        ("MiB", "KiB", 1024.0),
        ("Wh", "J", 3600.0),
        ("kWh", "Wh", 1e3),
        ("kW", "W", 1e3),
        ("TFLOP/s", "GFLOP/s", 1e3),
        ("TFLOPS", "GFLOPS", 1e3),
        ("GFLOP/s", "TFLOP/s", 1e-3),
        ("Gbit/s", "MB/s", 125.0),
    ],
)
def test_units_of_one_dimension_convert(have, want, factor):
    assert conversion(have, want) == pytest.approx(factor, rel=1e-12)


@pytest.mark.parametrize(
    "have, want",
    [
        ("s", "tokens/s"),
        ("tokens/s", "samples/s"),
        ("MB/s", "Hz"),
        ("J", "W"),
        ("MB", "%"),
        ("x", "y"),
        ("x", "s"),
        ("tps", "tokens/s"),
    ],
)
def test_across_dimensions_or_between_unknown_units_there_is_no_conversion(have, want):
    with pytest.raises(UnitMismatch) as raised:
        conversion(have, want)
    assert f"'{have}'" in str(raised.value) and f"'{want}'" in str(raised.value)
    assert not same_quantity(have, want)


def test_an_unknown_unit_equals_only_itself_and_no_unit_meets_any():
    """ReFrame groups performance figures by their unit text (reframe/frontend/reporting/utility.py,
    DEFAULT_GROUP_BY has `punit`): a unit no rule reads is compared only with the same text."""
    assert not parse_unit("x").known and conversion("x", "x") == 1.0
    assert not parse_unit("tps").known and not same_quantity("tps", "TPS")
    assert (
        conversion("", "ms") == conversion("ms", "") == 1.0
    )  # an older history's figure without a unit


def test_offset_units_and_unreadable_texts_are_unknown():
    for text in ("degC", "°C", "<b>ms</b>", "2 s", "s" * 50):
        assert not parse_unit(text).known, text


def test_canonical_units():
    assert [
        parse_unit(u).canonical for u in ("ms", "Wh", "kW", "GB/s", "TFLOPS", "tok/s", "Hz")
    ] == ["s", "J", "W", "B/s", "FLOP/s", "token/s", "1/s"]


_KNOWN = [
    *(f"{p}{u}" for p in ("", "k", "M", "G", "T") for u in ("B", "B/s", "FLOP/s", "W", "J", "Wh")),
    "s",
    "ms",
    "us",
    "µs",
    "ns",
    "min",
    "h",
    "day",
    "MiB",
    "GiB",
    "Hz",
    "%",
    *(
        f"{w}/{t}"
        for w in sorted({a for aliases in COUNTS.values() for a in aliases})
        for t in ("s", "sec")
    ),
]


@given(st.text(max_size=60))
def test_the_parser_never_raises(text):
    parsed = parse_unit(text)
    assert math.isfinite(parsed.scale) and parsed.scale > 0
    if not parsed.known:
        assert parsed.scale == 1.0 and parsed.canonical == text.strip()


@given(st.text(alphabet="kKmMgGtTbBsSpPeErRfFlLoOiIwWhHjJ/_ ", max_size=12))
def test_unit_like_texts_never_raise(text):
    parse_unit(text)


@given(st.sampled_from(_KNOWN), st.sampled_from(_KNOWN), st.floats(1e-6, 1e6))
@settings(deadline=None)  # the first example builds the units library's registry (0.25 s loaded)
def test_scales_round_trip(a, b, value):
    unit = parse_unit(a)
    assert unit.known, a
    assert conversion(unit.canonical, a) * unit.scale == pytest.approx(
        1.0
    )  # into the canonical and back
    assert parse_unit(unit.canonical).dimension == unit.dimension
    if same_quantity(a, b):
        assert value * conversion(a, b) * conversion(b, a) == pytest.approx(value)
