"""An <analyser> over work folders laid out by a plan: files, use=, reduce, cache, missing logs."""

import os
import time

import pytest

from caramel.stages.analyse import AnalysisCache, analyse, analyse_all
from caramel.stages.analyse.inputs import AnalyseError

RESULT_CREATION = """
<jube><benchmark name="rc" outpath="run">
  <parameterset name="p"><parameter name="number" type="int">1,2,4</parameter></parameterset>
  <patternset name="all"><pattern name="number_pat" type="int">.*? $jube_pat_int</pattern></patternset>
  <patternset name="en"><pattern name="number_pat_en" type="int">Number: $jube_pat_int</pattern></patternset>
  <patternset name="de"><pattern name="number_pat_de" type="int" unit="Stk">Zahl: $jube_pat_int</pattern>
    <pattern name="twice" type="int" mode="python">$number_pat_de*2</pattern></patternset>
  <step name="write"><use>p</use><do>true</do></step>
  <analyser name="a"><use>all</use>
    <analyse step="write"><file use="en">en</file><file use="de">de</file></analyse>
  </analyser>
</benchmark></jube>
"""


def test_files_with_their_own_patternsets_accumulate(ws):
    plan = ws.plan(RESULT_CREATION)
    for wp in plan.workpackages:
        n = wp.params().typed_values()["number"]
        ws.write(plan, wp.id, "en", f"Number: {n}\n")
        ws.write(plan, wp.id, "de", f"Zahl: {n}\n")
    result = analyse_all(ws.input(plan))["a"]
    values = result.groups[2].values
    assert values["number_pat"] == 4 and values["number_pat_cnt"] == 2  # both files, pattern of the analyser
    assert values["number_pat_en"] == 4 and values["number_pat_de_cnt"] == 1
    assert values["twice"] == 8


def test_file_patternset_joins_only_when_the_file_exists(ws):
    plan = ws.plan(RESULT_CREATION)
    ws.write(plan, 0, "en", "Number: 1\n")  # no "de": its derived pattern "twice" is not computed
    ws.start(plan)
    groups = analyse_all(ws.input(plan))["a"].groups
    assert "twice" not in groups[0].values
    assert groups[0].missing == ["de"]
    assert groups[1].missing == ["en", "de"]


def test_workpackage_that_never_started_has_empty_values(ws):
    plan = ws.plan(RESULT_CREATION)
    ws.write(plan, 0, "en", "Number: 1\n")
    groups = analyse_all(ws.input(plan))["a"].groups
    assert not groups[1].started and groups[1].values == {} and groups[1].missing == []


ITERATIONS = """
<jube><benchmark name="it" outpath="run">
  <parameterset name="p"><parameter name="n" type="int">1,2</parameter></parameterset>
  <patternset name="t"><pattern name="t" type="float" unit="s">time $jube_pat_fp</pattern></patternset>
  <step name="s" iterations="3"><use>p</use><do>true</do></step>
  <analyser name="reduced"><use>t</use><analyse step="s"><file>out*.log</file></analyse></analyser>
  <analyser name="each" reduce="false"><use>t</use><analyse step="s"><file>out*.log</file></analyse></analyser>
</benchmark></jube>
"""


def test_reduce_merges_iteration_siblings_and_globs(ws):
    plan = ws.plan(ITERATIONS)
    for wp in plan.workpackages:
        ws.write(plan, wp.id, "out1.log", f"time {wp.id}.0\n")
    ws.write(plan, 1, "out2.log", "time 10\n")
    result = analyse_all(ws.input(plan))
    reduced = result["reduced"].groups
    assert sorted(reduced) == [0, 3]
    assert reduced[0].members == [0, 1, 2]
    assert reduced[0].values["t_cnt"] == 4 and reduced[0].values["t_max"] == 10.0
    assert reduced[0].values["t_first"] == 0.0 and reduced[0].values["t_last"] == 2.0
    assert reduced[3].values["t_avg"] == 4.0
    assert sorted(result["each"].groups) == [0, 1, 2, 3, 4, 5]


def test_cache_reuses_and_notices_changed_logs(ws):
    plan = ws.plan(ITERATIONS)
    paths = [ws.write(plan, wp.id, "out.log", "time 1\n") for wp in plan.workpackages]
    inp = ws.input(plan, cache=True)
    first = analyse_all(inp, ["reduced"])["reduced"]
    assert (first.scanned, first.reused) == (2, 0)
    second = analyse_all(inp, ["reduced"])["reduced"]
    assert (second.scanned, second.reused) == (0, 2)
    assert second.groups[0].values == first.groups[0].values
    with open(paths[4], "a") as handle:  # a log of the second group grows
        handle.write("time 7\n")
    third = analyse_all(inp, ["reduced"])["reduced"]
    assert (third.scanned, third.reused) == (1, 1)
    assert third.groups[3].values["t_max"] == 7.0
    os.utime(paths[0], ns=(time.time_ns(), time.time_ns() + 10**9))  # same size, newer
    assert analyse_all(inp, ["reduced"])["reduced"].scanned == 1
    ws.write(plan, 2, "out9.log", "time 5\n")  # a new file matching the glob
    fourth = analyse_all(inp, ["reduced"])["reduced"]
    assert fourth.scanned == 1 and fourth.groups[0].values["t_cnt"] == 4


def test_cache_is_dropped_when_the_analyser_changes(ws):
    plan = ws.plan(ITERATIONS)
    for wp in plan.workpackages:
        ws.write(plan, wp.id, "out.log", "time 1\n")
    inp = ws.input(plan, cache=True)
    analyse_all(inp, ["reduced"])
    inp.benchmark.patternsets["t"].patterns[0].regex = "time ${jube_pat_int}"
    again = analyse_all(inp, ["reduced"])["reduced"]
    assert again.scanned == 2


def test_unwritable_cache_is_not_an_error(ws, tmp_path):
    cache = AnalysisCache(str(tmp_path / "no" / "such" / "dir" / "analyse.db"))
    assert cache.load("a", "x") == {}
    cache.store("a", "x", [(0, "", "")])


def test_alternative_work_dir_and_substituted_file_name(ws):
    plan = ws.plan("""
    <jube><benchmark name="alt" outpath="run">
      <parameterset name="p"><parameter name="tag">a,b</parameter></parameterset>
      <patternset name="v"><pattern name="v" type="int">v=$jube_pat_int</pattern></patternset>
      <step name="s" work_dir="shared_$tag"><use>p</use><do>true</do></step>
      <analyser name="x"><use>v</use><analyse step="s"><file>log_$tag.txt</file></analyse></analyser>
    </benchmark></jube>""")
    for tag, value in (("a", 1), ("b", 2)):
        os.makedirs(os.path.join(ws.root, f"shared_{tag}"))
        with open(os.path.join(ws.root, f"shared_{tag}", f"log_{tag}.txt"), "w") as handle:
            handle.write(f"v={value}\n")
    ws.start(plan)
    groups = analyse_all(ws.input(plan))["x"].groups
    assert [groups[i].values["v"] for i in (0, 1)] == [1, 2]


def test_pattern_named_like_a_parameter_is_an_error(ws):
    plan = ws.plan("""
    <jube><benchmark name="clash" outpath="run">
      <parameterset name="p"><parameter name="number">1</parameter></parameterset>
      <patternset name="v"><pattern name="number">n=$jube_pat_int</pattern></patternset>
      <step name="s"><use>p</use><do>true</do></step>
      <analyser name="x"><use>v</use><analyse step="s"><file>stdout</file></analyse></analyser>
    </benchmark></jube>""")
    ws.write(plan, 0, "stdout", "n=1\n")
    with pytest.raises(AnalyseError, match=r"bench.xml:3: pattern .number. has the name of a parameter"):
        analyse_all(ws.input(plan))


def test_unknown_names_are_errors_with_hints(ws):
    bench_xml = """
    <jube><benchmark name="u" outpath="run">
      <patternset name="v"><pattern name="n">$jube_pat_int</pattern></patternset>
      <step name="run"><do>true</do></step>
      <analyser name="x"><use>w</use><analyse step="run"><file>stdout</file></analyse></analyser>
      <analyser name="y"><use>v</use><analyse step="runn"><file>stdout</file></analyse></analyser>
    </benchmark></jube>"""
    plan = ws.plan(bench_xml)
    inp = ws.input(plan)
    with pytest.raises(AnalyseError, match="uses patternset 'w', which is not defined") as err:
        analyse(inp, inp.benchmark.analysers["x"])
    assert "patternsets: v" in str(err.value)
    with pytest.raises(AnalyseError, match="analyses step 'runn'") as err:
        analyse(inp, inp.benchmark.analysers["y"])
    assert "did you mean 'run'" in str(err.value)
    with pytest.raises(AnalyseError, match="analyser 'z' is not defined"):
        analyse_all(inp, ["z"])
