"""A figure's unit and direction (spec.units): declared, else the unit, else the name, else unknown."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.stages.spec.units import (
    ENERGY,
    MEMORY,
    POWER,
    TIME,
    direction,
    is_time_unit,
    name_direction,
    unit_direction,
    unit_in_name,
    unit_problem,
    unreadable_units,
)
from caramel.vocabulary import Direction

LOWER, HIGHER, UNKNOWN = Direction.LOWER, Direction.HIGHER, Direction.UNKNOWN


@pytest.mark.parametrize("unit", ["s", "ms", "us", "µs", "ns", "min", "h", "J", "kJ", "Wh", "kWh", "W", "kW",
                                  "B", "KB", "MB", "GB", "GiB", "MiB", "s/iter", "ms/token", "J/token", "W/GPU",
                                  "ms (p99)", "seconds"])
def test_times_energies_powers_and_sizes_are_better_lower(unit):
    assert unit_direction(unit) is LOWER


@pytest.mark.parametrize("unit", ["tokens/s", "samples/sec", "samples per second", "images/s", "examples/sec",
                                  "GB/s", "FLOP/s", "TFLOPS", "TFLOPs", "MFLOP/s", "tokens/J", "images/Wh",
                                  "tokens/s/GPU", "tokens/s per GPU", "it/s", "s^-1", "1/s", "fps",
                                  "images_per_second", "samples/min"])
def test_rates_per_second_per_joule_and_flops_are_better_higher(unit):
    assert unit_direction(unit) is HIGHER


@pytest.mark.parametrize("unit", ["", "%", "tokens", "GFlop", "items", "<b>s</b>"])
def test_a_unit_that_does_not_say_decides_nothing(unit):
    """A percentage is a utilisation (higher) or an overhead (lower): it must be declared."""
    assert unit_direction(unit) is UNKNOWN


@pytest.mark.parametrize("name, expected", [
    ("images_sec", HIGHER), ("tokens_sec", HIGHER), ("tokens_s", HIGHER), ("imagespersec", HIGHER),
    ("ImagesPerSec", HIGHER), ("tokens_per_second", HIGHER), ("Tokens/second", HIGHER), ("Images/J", HIGHER),
    ("Tokens/J", HIGHER), ("Avg_TFLOPs/GPU", HIGHER), ("tflops_pat_avg", HIGHER), ("throughput", HIGHER),
    ("t_avg", LOWER), ("t", LOWER), ("t_max", LOWER), ("time", LOWER), ("elapsed", LOWER), ("elapsed_s", LOWER),
    ("compile_sec", LOWER), ("Time/iteration(s)", LOWER), ("Runtime(min)", LOWER), ("Energy(Wh)", LOWER),
    ("Energy/device(Wh)", LOWER), ("AvgPower(W)", LOWER), ("latency_ms", LOWER), ("energy_per_device", LOWER),
    ("JobID", UNKNOWN), ("jobid", UNKNOWN), ("Iterations", UNKNOWN), ("rate", UNKNOWN), ("performance", UNKNOWN),
])
def test_names(name, expected):
    """The old guess took `_s`/`_sec` names as times and `t_avg` as a rate (issue 21)."""
    assert name_direction(name) is expected


def test_a_declaration_wins_then_the_unit_then_the_name():
    assert direction("elapsed", "s", "higher") is HIGHER  # declared, whatever else says
    assert direction("throughput", "ms") is LOWER  # the unit before the name
    assert direction("images_sec") is HIGHER
    assert direction("errors", "%") is UNKNOWN
    assert direction("errors", "%", "lower") is LOWER
    assert direction("x", "", "sideways") is UNKNOWN


def test_a_unit_in_a_title():
    assert unit_in_name("Time/iteration(s)") == "s" and unit_in_name("Energy[Wh]") == "Wh"
    assert unit_in_name("Tokens/second") == "" and unit_in_name("x(<b>)") == ""


@pytest.mark.parametrize("text, problem", [
    ("<b>s</b>", "'<'"), ("s\x00", "'\\x00'"), ("s\n", None), ("s" * 41, "longer than 40"),
    ("a b c d e", "more than 4 words"), ("s,ms", "','"), ('"s"', "'\"'"), ("ms\x1b[31m", "'\\x1b'"),
])
def test_a_unit_that_cannot_be_read(text, problem):
    found = unit_problem(text)
    assert (found is None) if problem is None else (problem in found), found


def test_readable_units():
    for unit in ("", "ms", "tokens/s (per GPU)", "°C", "µs", "m^2", "samples_per_second", "kWh", "1e3 tokens/s"):
        assert unit_problem(unit) is None, unit


def test_an_unreadable_performance_unit_names_its_file_and_line():
    class Figure:
        def __init__(self, metric):
            self.metric, self.source = metric, "/w/stdout:3"

    figures = [Figure("<script>ms</script>"), Figure("ms")]
    notes = unreadable_units(figures)
    assert len(notes) == 1 and notes[0].startswith("/w/stdout:3: the unit '<script>ms</script>' cannot be read")
    assert [f.metric for f in figures] == ["", "ms"]


def test_time_units():
    assert is_time_unit("s") and is_time_unit("ms/step") and not is_time_unit("tokens/s") and not is_time_unit("<")


# Property tests: any time unit is lower, any X/time-unit is higher, nothing raises on any text.
_words = st.text(alphabet=st.characters(whitelist_categories=("Ll", "Lu")), min_size=1, max_size=10)


@given(st.sampled_from(sorted(TIME | ENERGY | POWER | MEMORY)), st.sampled_from(["", " ", "/iter", "/token"]))
def test_any_time_energy_power_or_size_is_lower(unit, per):
    assert unit_direction(unit + per if per.strip() else unit) is LOWER


@given(_words, st.sampled_from(sorted(TIME | ENERGY)), st.sampled_from(["/", " per ", "/"]))
def test_anything_per_time_or_energy_is_higher(what, per_what, sep):
    unit = f"{what}{sep}{per_what}"
    assert unit_problem(unit) is None or len(unit) > 40
    if unit_problem(unit) is None:
        assert unit_direction(unit) is HIGHER


@given(st.text(max_size=80), st.text(max_size=80), st.text(max_size=12))
def test_never_raises_on_any_text(name, unit, declared):
    assert direction(name, unit, declared) in (LOWER, HIGHER, UNKNOWN)
    assert unit_problem(unit) is None or isinstance(unit_problem(unit), str)
    assert isinstance(unit_in_name(name), str)


@given(st.text(alphabet=st.characters(whitelist_categories=("Cc",)), min_size=1, max_size=5), st.text(max_size=10))
def test_control_characters_are_never_readable(control, rest):
    if (control + rest).strip():
        assert unit_problem("s" + control + rest + "x") is not None
