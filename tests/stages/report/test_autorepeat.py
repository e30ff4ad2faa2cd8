"""report.autorepeat.verdict: when `--repeat auto` stops and why (docs/cli.md): a failure at once,
convergence from the minimum on, then the maximum count, then the maximum time."""

from __future__ import annotations

import pytest

from caramel.errors import RunError
from caramel.stages.engine.rounds import AutoRepeat
from caramel.stages.engine.settings import Summary
from caramel.stages.report.autorepeat import Widest, verdict

RULE = AutoRepeat(target_pct=2.0, minimum=3, maximum=5, seconds=60.0)
OK = Summary("/runs/000000", 0, "b", {"work": {"done": 3}})
NARROW, WIDE = Widest("t/value", 1.5), Widest("t/value (x=1)", 9.0)


def test_converged_only_from_the_minimum_on() -> None:
    assert verdict(RULE, 2, 1.0, OK, NARROW) is None
    assert (
        verdict(RULE, 3, 1.0, OK, NARROW)
        == "converged: widest 95 % half-width 1.50 % (t/value) <= 2 %"
    )


def test_a_wide_figure_goes_on_to_the_maximum_count() -> None:
    assert verdict(RULE, 4, 1.0, OK, WIDE) is None
    assert (
        verdict(RULE, 5, 1.0, OK, WIDE)
        == "max count: 5 repeats, widest 95 % half-width 9.00 % (t/value (x=1))"
    )


def test_the_maximum_time_stops_even_before_the_minimum() -> None:
    assert verdict(RULE, 1, 61.0, OK, WIDE).startswith("max time: 61.0 s >= 60 s")


def test_a_failure_stops_at_once() -> None:
    failed = Summary(
        "/runs/000000", 0, "b", {"work": {"failed": 1}}, failed=[(1, "work", "exit code 1")]
    )
    assert (
        verdict(RULE, 1, 0.0, failed, None)
        == "failed: workpackage 1 (work) failed in repeat 1: exit code 1"
    )


def test_no_declared_figure_stops_at_the_minimum() -> None:
    assert verdict(RULE, 2, 0.0, OK, None) is None
    assert verdict(RULE, 3, 0.0, OK, None).startswith("no figures:")


@pytest.mark.parametrize(
    "args", [(0.0, 3, 30, None), (2.0, 1, 30, None), (2.0, 4, 3, None), (2.0, 3, 30, 0.0)]
)
def test_a_rule_that_cannot_hold_is_refused(args: tuple) -> None:
    with pytest.raises(RunError):
        AutoRepeat(*args)
