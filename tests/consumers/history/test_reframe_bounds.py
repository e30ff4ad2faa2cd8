"""caramel's target bounds judged by ReFrame's own code (issue 34): the expected verdicts and bounds
are what ReFrame 4.x computes, called here, never values written by hand.

- reframe/utility/sanity.py, `assert_reference(val, ref, lower_thres, upper_thres)`: pass when it
  returns, fail when it raises SanityError; it raises ValueError (not SanityError, as its docstring
  says) for a threshold out of range, from `reference_bounds`, which gives the bounds.
- reframe/core/pipeline.py, `RegressionTest.check_performance`: a reference is the tuple
  `(ref, lower_thres, upper_thres[, unit])`, judged by `assert_reference(val, *ref[:3])`.

How caramel's references map onto ReFrame's thresholds (targets.py, `Reference.bounds`):
`[value, lower, upper, unit]` and `{value, lower, upper}` are ReFrame's tuple, an explicit null is
ReFrame's None (no bound); a side left out takes caramel's default, the tolerance `threshold`
percent where the figure gets worse: ReFrame's lower_thres = -threshold/100 for a figure where
more is better, upper_thres = +threshold/100 for one where less is better, and no bound on the
other side (nor on either side when the direction is unknown).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reframe.core.exceptions import SanityError
from reframe.utility import sanity as reframe_sanity
from tests.run_bench import bench

from caramel.consumers.history.targets import Reference, read_targets
from caramel.errors import RunError

Threshold = float | None


def reframe_passes(value: float, ref: float, lower: Threshold, upper: Threshold) -> bool:
    """ReFrame's verdict: reframe/utility/sanity.py, assert_reference (its ValueError passes
    through)."""
    try:
        reframe_sanity.evaluate(reframe_sanity.assert_reference(value, ref, lower, upper))
    except SanityError:
        return False
    return True


def reframe_bounds(ref: float, lower: Threshold, upper: Threshold) -> tuple[float, float]:
    """ReFrame's bounds: reframe/utility/sanity.py, reference_bounds."""
    return reframe_sanity.reference_bounds(ref, lower, upper)


def caramel_reference(folder: Path, spec: object) -> Reference:
    """`spec` written as the one reference of a targets file (JSON) and read back by caramel."""
    path = folder / "targets.json"
    path.write_text(json.dumps({"systems": {"local": {"gemm": spec}}}))
    return read_targets(str(path)).entries[0].figures[""]


def caramel_passes(reference: Reference, value: float, direction: str, threshold: float) -> bool:
    """caramel's verdict on a value (methodology._line: `low <= result <= high`)."""
    low, high = reference.bounds(direction, threshold)
    return low <= value <= high


# (value, ref, lower_thres, upper_thres): edges of each rule of reference_bounds
CASES = [
    (95.0, 100.0, -0.05, 0.05),  # on the lower bound
    (94.99, 100.0, -0.05, 0.05),
    (105.0, 100.0, -0.05, 0.05),  # 100 * 1.05 is 105.00000000000001: inside
    (105.01, 100.0, -0.05, 0.05),
    (0.0, 100.0, -1.0, 0.0),  # -1: the lowest lower threshold above zero
    (1e12, 100.0, -0.05, None),  # None: no upper bound
    (-1e12, 100.0, None, 0.05),
    (-105.0, -100.0, -0.05, 0.05),  # a negative reference turns the thresholds round
    (-95.0, -100.0, -0.05, 0.05),
    (-94.0, -100.0, -0.05, 0.05),
    (-106.0, -100.0, -0.05, 0.05),
    (
        -600.0,
        -100.0,
        -5.0,
        1.0,
    ),  # below zero the lower threshold has no floor, the upper is at most 1
    (-601.0, -100.0, -5.0, 1.0),
    (0.0, -100.0, -5.0, 1.0),
    (0.05, 0.0, -0.1, 0.05),  # a zero reference: the thresholds are the bounds themselves
    (0.06, 0.0, -0.1, 0.05),
    (-0.1, 0.0, -0.1, 0.05),
    (-0.11, 0.0, -0.1, 0.05),
    (-50.0, 0.0, -50.0, None),
    (math.nan, 100.0, -0.05, 0.05),  # NaN is never within bounds
    (math.inf, 100.0, -0.05, None),
    (-math.inf, 100.0, None, None),
]


@pytest.mark.parametrize(("value", "ref", "lower", "upper"), CASES)
def test_edge_cases_judged_as_reframe_judges(
    tmp_path: Path, value: float, ref: float, lower: Threshold, upper: Threshold
) -> None:
    reference = caramel_reference(tmp_path, [ref, lower, upper])
    for direction in ("higher", "lower", ""):  # both sides given: the direction changes nothing
        assert reference.bounds(direction, 5) == reframe_bounds(ref, lower, upper)
        assert caramel_passes(reference, value, direction, 5) == reframe_passes(
            value, ref, lower, upper
        )


# thresholds reference_bounds refuses (ValueError 'invalid low/high threshold value'), some it takes
RANGES = [
    (100.0, 0.1, None, False),  # a lower threshold above 0
    (100.0, -1.5, None, False),  # below -1 for a reference above zero
    (100.0, None, -0.1, False),  # an upper threshold below 0
    (100.0, None, 30.0, True),
    (-100.0, 0.1, None, False),
    (-100.0, -30.0, None, True),
    (-100.0, None, 1.5, False),  # above 1 for a reference below zero
    (-100.0, None, 1.0, True),
    (0.0, 0.1, None, False),
    (0.0, -30.0, 30.0, True),
    (0.0, None, -0.1, False),
]


@pytest.mark.parametrize(("ref", "lower", "upper", "valid"), RANGES)
def test_thresholds_reframe_refuses_are_errors_naming_the_line(
    tmp_path: Path, ref: float, lower: Threshold, upper: Threshold, valid: bool
) -> None:
    try:
        reframe_bounds(ref, lower, upper)
        reframe_valid = True
    except ValueError:
        reframe_valid = False
    assert reframe_valid == valid
    path = tmp_path / "targets.yaml"
    path.write_text(
        f"systems:\n  local:\n    gemm: [{ref}, {json.dumps(lower)}, {json.dumps(upper)}]\n"
    )
    if valid:
        assert read_targets(str(path)).entries[0].figures[""].bounds("higher", 5) == reframe_bounds(
            ref, lower, upper
        )
        return
    with pytest.raises(RunError) as caught:
        read_targets(str(path))
    message = str(caught.value)
    assert f"{path}:3" in message and "Traceback" not in message
    assert ("lower bound" if lower is not None else "upper bound") in message


def test_the_mapping_form_and_percentages_are_the_same_thresholds(tmp_path: Path) -> None:
    spec = {"value": -100, "lower": "-5%", "upper": None}  # null: no bound (ReFrame's None)
    reference = caramel_reference(tmp_path, spec)
    assert reference.bounds("lower", 5) == reframe_bounds(-100, -0.05, None) == (-105.0, math.inf)


@pytest.mark.parametrize("direction", ["higher", "lower", ""])
@pytest.mark.parametrize("ref", [100.0, -100.0, 0.0])
def test_the_default_tolerance_is_one_reframe_threshold_on_the_bad_side(
    tmp_path: Path, direction: str, ref: float
) -> None:
    """A reference without bounds: `threshold` percent is ReFrame's lower_thres -threshold/100 where
    more is better, upper_thres +threshold/100 where less is better, none when the direction is
    unknown; the other side is open (None)."""
    mapped = {"higher": (-0.05, None), "lower": (None, 0.05), "": (None, None)}[direction]
    number = caramel_reference(tmp_path, ref)
    assert number.bounds(direction, 5) == reframe_bounds(ref, *mapped)
    own = caramel_reference(tmp_path, {"value": ref, "threshold": 5})
    assert own.bounds(direction, 50) == reframe_bounds(ref, *mapped)
    # one side given: it is ReFrame's threshold; the side left out takes the default where worse
    half = caramel_reference(tmp_path, [ref, -0.2])
    assert half.bounds(direction, 5) == reframe_bounds(ref, -0.2, mapped[1])


def test_a_zero_references_bounds_follow_its_unit(tmp_path: Path) -> None:
    """At zero ReFrame's thresholds are absolute bounds: in the reference's unit, converted with
    it."""
    reference = caramel_reference(tmp_path, [0, -0.002, 0.001, "s"]).in_unit("ms")
    assert reference.bounds("lower", 5) == pytest.approx((-2.0, 1.0))


def test_the_tuples_unit_is_read(tmp_path: Path) -> None:
    reference = caramel_reference(tmp_path, [13, -0.1, 0.1, "ms"])
    assert reference.unit == "ms" and reference.in_unit("s").bounds("lower", 5) == pytest.approx(
        reframe_bounds(0.013, -0.1, 0.1)
    )


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
fraction = st.none() | st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300, deadline=None
)
@given(
    ref=finite | st.sampled_from([0.0, 1.0, -1.0]),
    lower=fraction,
    upper=fraction,
    value=finite,
    at_bound=st.sampled_from([None, 0, 1]),
    direction=st.sampled_from(["higher", "lower"]),
)
@example(ref=-100.0, lower=-0.05, upper=0.1, value=-104.0, at_bound=None, direction="higher")
@example(ref=0.0, lower=-0.5, upper=0.5, value=0.25, at_bound=None, direction="lower")
def test_any_reference_is_judged_as_reframe_judges(
    tmp_path: Path,
    ref: float,
    lower: Threshold,
    upper: Threshold,
    value: float,
    at_bound: int | None,
    direction: str,
) -> None:
    """For any (ref, lower, upper): caramel refuses what ReFrame refuses, and otherwise gives
    ReFrame's bounds and ReFrame's verdict, also for a value exactly on a bound."""
    try:
        bounds = reframe_bounds(ref, lower, upper)
    except ValueError:
        with pytest.raises(RunError):
            caramel_reference(tmp_path, [ref, lower, upper])
        return
    if at_bound is not None and math.isfinite(bounds[at_bound]):
        value = bounds[at_bound]
    reference = caramel_reference(tmp_path, [ref, lower, upper])
    assert reference.bounds(direction, 5) == bounds
    assert caramel_passes(reference, value, direction, 5) == reframe_passes(
        value, ref, lower, upper
    )


@settings(max_examples=200, deadline=None)
@given(
    ref=finite,
    value=finite,
    percent=st.floats(0, 100),
    direction=st.sampled_from(["higher", "lower"]),
)
def test_any_default_tolerance_is_judged_as_reframe_judges(
    ref: float, value: float, percent: float, direction: str
) -> None:
    lower, upper = (-percent / 100, None) if direction == "higher" else (None, percent / 100)
    reference = Reference(ref)
    assert reference.bounds(direction, percent) == reframe_bounds(ref, lower, upper)
    assert caramel_passes(reference, value, direction, percent) == reframe_passes(
        value, ref, lower, upper
    )


# one run printing four figures, each with a unit that says which way is better
FIGURES = """name: rf
outpath: runs
step: {name: work, do: 'echo "rate $RATE"; echo "lat $LAT"; echo "skew $SKEW"; echo "drift $DRIFT"'}
patternset:
  name: p
  pattern:
    - {name: rate, type: float, unit: tokens/s, _: "rate $jube_pat_fp"}
    - {name: lat, type: float, unit: ms, _: "lat $jube_pat_fp"}
    - {name: skew, type: float, unit: s, _: "skew $jube_pat_fp"}
    - {name: drift, type: float, unit: ms, _: "drift $jube_pat_fp"}
analyser: {name: a, use: p, analyse: {step: work, file: stdout}}
result: {use: a, table: {name: tbl, column: [rate, lat, skew, drift]}}
"""

# ReFrame's reference tuples (ref, lower_thres, upper_thres, unit) in caramel's targets file
REFERENCES = {
    "rate": (1000.0, -0.1, 0.5, "tokens/s"),
    "lat": (10.0, -0.2, None, "ms"),  # None on the bad side: no bound (not --threshold)
    "skew": (-3.0, -0.05, 0.1, "s"),  # a negative reference
    "drift": (0.0, -0.5, 0.5, "ms"),
}  # a zero reference: absolute bounds
TARGETS = "systems:\n  local:\n    rf:\n" + "".join(
    f"      {name}: [{ref}, {lower}, {'null' if upper is None else upper}, {unit}]\n"
    for name, (ref, lower, upper, unit) in REFERENCES.items()
)


@pytest.mark.parametrize(
    "printed",
    [
        {"rate": 950.0, "lat": 20.0, "skew": -3.1, "drift": 0.2},  # all within ReFrame's bounds
        {"rate": 850.0, "lat": 5.0, "skew": -2.6, "drift": 0.6},  # rate, skew and drift outside
    ],
)
def test_bench_compare_gives_reframes_verdicts(
    tmp_path: Path, env: dict[str, str], printed: dict[str, float]
) -> None:
    (tmp_path / "rf.yaml").write_text(FIGURES)
    run_env = dict(env, **{name.upper(): str(value) for name, value in printed.items()})
    done = bench("run", "rf.yaml", "--tag", "local", "-q", cwd=tmp_path, env=run_env)
    assert done.returncode == 0, done.stderr
    (tmp_path / "targets.yaml").write_text(TARGETS)
    out = bench(
        "compare",
        "-i",
        "last",
        "--targets",
        "targets.yaml",
        "--format",
        "json",
        cwd=tmp_path,
        env=env,
    )
    assert "Traceback" not in out.stderr, out.stderr
    lines = {line["name"]: line for line in json.loads(out.stdout)["benchmarks"]}
    verdicts = {}
    for name, (ref, lower, upper, _unit) in REFERENCES.items():
        line = lines[f"rf {name}"]
        verdicts[name] = reframe_passes(printed[name], ref, lower, upper)
        assert line["verdict"] == ("pass" if verdicts[name] else "fail"), line
        bounds = (
            -math.inf if line["low"] is None else line["low"],  # JSON writes no bound as null
            math.inf if line["high"] is None else line["high"],
        )
        assert bounds == pytest.approx(reframe_bounds(ref, lower, upper))
    # diff is relative to the target's size, sign turned where less is better: -3.1 s against -3 s
    # is 3.3 % better, -2.6 s 13.3 % worse
    skew = printed["skew"]
    assert lines["rf skew"]["diff_pct"] == pytest.approx(-(skew + 3.0) / 3.0 * 100)
