"""spec/update.py: an edited benchmark's analysis definitions over the stored run's model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caramel.errors import SpecError
from caramel.stages.spec.loader import load_one
from caramel.stages.spec.update import updated

FILE = """name: b
outpath: runs
fileset: {name: f, copy: input.txt}
parameterset: {name: p, parameter: {name: n, _: "1,2"}}
patternset: {name: pat, pattern: {name: x, type: int, _: "x=$jube_pat_int"}}
step: {name: run, use: "p,f", do: "echo x=$n"}
analyser: {name: a, use: pat, analyse: {step: run, file: stdout}}
result: {use: a, table: {name: t, column: [n, x]}}
"""


def bench_in(folder: Path, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "b.yaml").write_text(text)
    return load_one(str(folder / "b.yaml"))


def test_analysis_parts_are_taken_the_rest_kept(tmp_path: Path) -> None:
    stored = bench_in(tmp_path / "a", FILE)
    edited_text = "\n\n" + FILE.replace("x=$jube_pat_int", "x: $jube_pat_int").replace(
        'do: "echo x=$n"}', 'do: "echo x=$n", sanity: {expect: "x="}}').replace(
        "result: {use: a,", "result: {use: a, result_dir: out,")
    edited = bench_in(tmp_path / "elsewhere", edited_text)  # other lines, other folder: no difference
    new = updated(stored, edited)
    assert new.patternsets["pat"].patterns[0].regex == "x: $jube_pat_int"
    assert [s.text for s in new.steps["run"].sanity] == ["x="]
    assert new.results[0].result_dir == os.path.join(str(tmp_path / "elsewhere"), "out")
    assert new.steps["run"].where == stored.steps["run"].where and new.parametersets is stored.parametersets
    assert stored.steps["run"].sanity == []  # the stored model itself is not changed


@pytest.mark.parametrize(("old", "new", "message"), [
    ('do: "echo x=$n"', 'do: "echo x=$n; sleep 1"', "step 'run' differs in its dos: 1 (command:"),
    ("copy: input.txt", "copy: other.txt", "fileset 'f' differs in its entries: 1 (path: 'input.txt' became"),
    ("parameterset: {name: p,", "parameterset: {name: q,", "parameterset 'p' is gone"),
])
def test_a_change_of_the_run_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    stored = bench_in(tmp_path / "a", FILE)
    with pytest.raises(SpecError, match="changes the run itself") as caught:
        updated(stored, bench_in(tmp_path / "b", FILE.replace(old, new).replace('use: "p,f"', 'use: "q,f"')
                                 if "name: q" in FILE.replace(old, new) else FILE.replace(old, new)))
    assert message in caught.value.message
