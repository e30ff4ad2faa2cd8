"""A step's `estimator` and `copies_aggregate` (issue 21): the grammar, and errors naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.errors import SpecError
from caramel.stages.spec.estimator import NAMES, Estimator, Samples, parse_estimator
from caramel.stages.spec.loader import load


def test_named_estimators() -> None:
    assert parse_estimator("all") == Estimator(Samples.ALL, 1)
    assert parse_estimator("milabench") == Estimator(Samples.TRIMMED, 0)
    assert parse_estimator("trimmed ddof=0") == Estimator(Samples.TRIMMED, 0)
    assert parse_estimator("All DDOF=0").caption == "estimator: mean of all samples, sd ddof=0"


@given(st.sampled_from(sorted(NAMES)), st.sampled_from(["", " ddof=0", " ddof=1"]))
def test_text_gives_the_estimator_back(name: str, ddof: str) -> None:
    estimator = parse_estimator(name + ddof)
    assert parse_estimator(estimator.text) == estimator


@given(st.text(max_size=30))
def test_any_text_is_an_estimator_or_a_spec_error(text: str) -> None:
    try:
        parse_estimator(text)
    except SpecError as exc:
        assert "estimator" in str(exc)


@pytest.mark.parametrize(("key", "value", "says"), [
    ("copies_aggregate", "total", "copies_aggregate='total' is neither sum nor mean"),
    ("estimator", "median", "estimator 'median' is not an estimator"),
    ("estimator", "all ddof=2", "'ddof=2' is not ddof=0 or ddof=1"),
])
def test_bad_declarations_name_file_and_line(tmp_path: Path, key: str, value: str, says: str) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(f"name: b\noutpath: runs\nstep:\n  name: run\n  copies: 2\n  {key}: {value}\n  do: echo\n")
    with pytest.raises(SpecError) as caught:
        load(str(path))
    assert says in str(caught.value) and f"{path}:4" in str(caught.value)


def test_declarations_are_kept_on_the_step(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text("name: b\noutpath: runs\nstep:\n  name: run\n  copies: 2\n  copies_aggregate: MEAN\n"
                    "  estimator: milabench\n  do: echo\n")
    [bench] = load(str(path))
    step = bench.steps["run"]
    assert (step.copies_aggregate, step.estimator) == ("mean", "trimmed ddof=0")


def test_xml_attributes(tmp_path: Path) -> None:
    path = tmp_path / "b.xml"
    path.write_text('<jube><benchmark name="b" outpath="runs"><step name="run" copies="2" copies_aggregate="mean" '
                    'estimator="trimmed ddof=0"><do>echo</do></step></benchmark></jube>')
    [bench] = load(str(path))
    assert (bench.steps["run"].copies_aggregate, bench.steps["run"].estimator) == ("mean", "trimmed ddof=0")
