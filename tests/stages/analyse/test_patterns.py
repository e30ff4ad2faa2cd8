"""Built-in patterns, substitution of pattern texts, and compile errors that name the pattern."""

import re

import pytest

from caramel.errors import Location
from caramel.stages.analyse.inputs import AnalyseError
from caramel.stages.analyse.patterns import BUILTIN_PATTERNS, Compiler
from caramel.stages.spec.model import Pattern


@pytest.mark.parametrize(("name", "text", "found"), [
    ("jube_pat_int", "a -12 b +3", ["-12", "+3"]),
    ("jube_pat_fp", "1.5 .25 3. 1e-3 -2.5E+4", ["1.5", ".25", "3", "1e-3", "-2.5E+4"]),
    ("jube_pat_wrd", "two words", ["two", "words"]),
])
def test_builtins(name, text, found):
    assert re.findall(BUILTIN_PATTERNS[name], text) == found


def test_non_capturing_builtins_do_not_make_groups():
    for name in ("jube_pat_nint", "jube_pat_nfp", "jube_pat_nwrd", "jube_pat_bl"):
        assert re.compile(BUILTIN_PATTERNS[name]).groups == 0


def test_substitution_with_parameters_builtins_and_other_patterns():
    patterns = [Pattern("unit_word", "(?:ms|s)"), Pattern("t", r"$step_name took $jube_pat_fp ${unit_word}"),
                Pattern("d", "$$HOME", mode="text")]
    compiler = Compiler(patterns)
    (probe,) = [p for p in compiler.probes({"step_name": "train"}) if p.name == "t"]
    assert probe.regex.pattern == r"train took ([+-]?(?:\d*\.?\d+(?:[eE][-+]?\d+)?|\d+\.)) (?:ms|s)"
    assert [p.name for p in compiler.probes({"step_name": "x"})] == ["unit_word", "t"]  # derived not scanned
    assert compiler.probes({"step_name": "train"}) is compiler.probes({"step_name": "train", "other": "1"})


def test_dollar_anchor_survives():
    (probe,) = Compiler([Pattern("n", r"value (\d+)$")]).probes({})
    assert probe.regex.findall("value 3\nvalue 4x\n") == ["3"]


def test_bad_regex_names_pattern_file_and_line():
    pattern = Pattern("broken", "value: ($jube_pat_int", where=Location("/b/bench.xml", 12))
    with pytest.raises(AnalyseError) as err:
        Compiler([pattern]).probes({})
    text = str(err.value)
    assert text.startswith("/b/bench.xml:12: pattern 'broken' is not a valid regular expression")
    assert "missing )" in text
