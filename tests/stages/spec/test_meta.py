"""The benchmark `meta` block: YAML mapping, XML inside <comment>, errors with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from caramel.errors import SpecError
from caramel.stages.spec.loader import load_one
from caramel.stages.spec.meta import parse_duration
from caramel.stages.spec.model import BenchmarkMeta

STEP = "parameterset: {name: p, parameter: {name: x, _: 1}}\nstep: {name: s, use: p, do: echo $x}\n"
XML = """<?xml version="1.0"?>
<jube>
  <benchmark name="b" outpath="out">
    <comment>Say hello
      <meta>
        {meta}
      </meta>
    </comment>
    <step name="s"><do>echo</do></step>
  </benchmark>
</jube>
"""


def yaml_file(tmp_path: Path, meta: str) -> Path:
    path = tmp_path / "b.yaml"
    path.write_text("name: b\noutpath: out\n" + meta + STEP)
    return path


def test_yaml_meta_is_typed(tmp_path: Path) -> None:
    path = yaml_file(tmp_path, "meta:\n  description: GPT\n  tags: [llm, gpt]\n  owner: me\n  precision: bf16\n"
                     "  devices: 4\n  time_limit: '01:30:00'\n  url: https://x\n  systems: A100, H100\n"
                     "  multiple_results: perf.csv\n")
    meta = load_one(str(path)).meta
    assert (meta.description, meta.tags, meta.owner, meta.precision, meta.devices, meta.time_limit, meta.url,
            meta.systems, meta.multiple_results) == ("GPT", ("llm", "gpt"), "me", "bf16", 4, 5400.0, "https://x",
                                                     ("A100", "H100"), "perf.csv")


def test_xml_meta_inside_comment(tmp_path: Path) -> None:
    path = tmp_path / "b.xml"
    path.write_text(XML.format(meta="<tags>a,b</tags><time_limit>90</time_limit><devices>8</devices>"))
    bench = load_one(str(path))
    assert bench.meta.tags == ("a", "b") and bench.meta.time_limit == 90 and bench.meta.devices == 8
    assert bench.comment == "Say hello"


def test_no_meta_is_empty(tmp_path: Path) -> None:
    meta = load_one(str(yaml_file(tmp_path, ""))).meta
    assert meta == BenchmarkMeta()
    assert meta.time_limit is None and meta.devices is None


@pytest.mark.parametrize("text, seconds", [("3600", 3600), ("0", 0), ("90.5", 90.5), ("10:30", 630),
                                           ("01:00:00", 3600), ("1-00:00:01", 86401)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("meta, line, message", [
    ("meta:\n  time_limit: soon\n", 4, "time_limit: 'soon' is not a duration"),
    ("meta:\n  devices: four\n", 4, "devices='four' is not a number of devices"),
    ("meta:\n  devices: 0\n", 4, "devices='0'"),
    ("meta:\n  descripton: x\n", 4, "unknown key 'descripton' in meta"),
    ("meta:\n  owner: {a: 1}\n", 4, "meta: 'owner' holds a mapping"),
    ("meta:\n  owner: [a, b]\n", 4, "'owner' is given 2 times"),
    ("meta: just text\n", 3, "meta: found 'just text' where a mapping was expected"),
])
def test_bad_yaml_meta(tmp_path: Path, meta: str, line: int, message: str) -> None:
    path = yaml_file(tmp_path, meta)
    with pytest.raises(SpecError) as err:
        load_one(str(path))
    assert message in err.value.message
    assert err.value.where.file == str(path)
    assert err.value.where.line == line


def test_bad_xml_meta_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "b.xml"
    path.write_text(XML.format(meta="<time_limit>1h</time_limit>"))
    with pytest.raises(SpecError) as err:
        load_one(str(path))
    assert err.value.where.line == 6 and "time_limit" in err.value.message


def test_weight_is_a_number_of_at_least_zero(tmp_path: Path) -> None:
    """`meta: weight` (issue 34): a member's weight in the campaign's score; anything else names the line."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\noutpath: runs\nmeta:\n  weight: 2.5\nstep: {name: s, do: echo}\n")
    assert load_one(str(path)).meta.weight == 2.5
    path.write_text("name: w\noutpath: runs\nmeta:\n  weight: heavy\nstep: {name: s, do: echo}\n")
    with pytest.raises(SpecError, match="weight='heavy' is not a weight") as caught:
        load_one(str(path))
    assert "w.yaml:4" in str(caught.value)
