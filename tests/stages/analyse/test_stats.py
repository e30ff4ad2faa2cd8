"""Statistics as JUBE computes them (its statistic example: the numbers 1..10)."""

import math

import pytest

from caramel.stages.analyse.inputs import AnalyseError
from caramel.stages.analyse.stats import Accumulator, default_values


def test_jube_statistic_example():
    acc = Accumulator("int")
    acc.add("1 2 3 4 5 6 7 8 9 10".split())
    values = acc.values("number_pat")
    assert {k: values[k] for k in ("number_pat", "number_pat_first", "number_pat_last", "number_pat_min",
                                   "number_pat_max", "number_pat_sum", "number_pat_cnt")} == {
        "number_pat": 1, "number_pat_first": 1, "number_pat_last": 10, "number_pat_min": 1,
        "number_pat_max": 10, "number_pat_sum": 55, "number_pat_cnt": 10}
    assert values["number_pat_avg"] == 5.5
    assert format(values["number_pat_std"], ".2f") == "3.03"


def test_int_conversion_is_jubes():
    acc = Accumulator("int")
    acc.add(["1e3", "7.9", "-2", "nan", "x1", "inf"])
    assert acc.first == 1000
    assert acc.cnt == 4  # "x1" and "inf" are not ints: dropped and counted
    assert acc.dropped == 2 and acc.bad == "x1"
    assert math.isnan(acc.last)


def test_string_pattern_has_no_numeric_statistics():
    acc = Accumulator("string")
    acc.add(["a", "b"])
    assert acc.values("w") == {"w": "a", "w_first": "a", "w_last": "b", "w_cnt": 2}


def test_nothing_matched_gives_no_values():
    assert Accumulator("float").values("x") == {}


def test_one_match_has_std_zero():
    acc = Accumulator("float")
    acc.add(["2.5"])
    assert acc.values("x")["x_std"] == 0


def test_merge_equals_one_sequence():
    one, a, b = Accumulator("float"), Accumulator("float"), Accumulator("float")
    one.add(["1", "5", "3", "4"])
    a.add(["1", "5"])
    b.add(["3", "4"])
    a.merge(b)
    assert a.values("x") == one.values("x")
    empty = Accumulator("float")
    empty.merge(one)
    assert empty.values("x") == one.values("x")


def test_defaults():
    assert default_values("p", "int", "0") == {"p": 0, "p_cnt": 0, "p_first": 0, "p_last": 0, "p_sum": 0,
                                               "p_min": 0, "p_max": 0, "p_avg": 0, "p_sum2": 0, "p_std": 0}
    assert default_values("s", "string", "none") == {"s": "none", "s_cnt": 0, "s_first": "none", "s_last": "none"}
    with pytest.raises(AnalyseError, match="default='abc' of pattern 'p' is not a int"):
        default_values("p", "int", "abc")
