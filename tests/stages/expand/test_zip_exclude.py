"""caramel's additions to the JUBE format: zip (values vary together) and exclude (drop combinations)."""

import textwrap

import pytest

from caramel.errors import ExpandError
from caramel.stages.expand.plan import make_plan
from caramel.stages.spec.loader import load_one

YAML = """
name: zipped
outpath: run
parameterset:
  - name: grid
    parameter:
      - {name: nodes, type: int, _: "1,2,4"}
      - {name: batch, type: int, _: "32,64,128"}
      - {name: prec, _: "fp16,bf16"}
    zip: {names: "nodes,batch"}
    exclude: "$nodes == 4 and '$prec' == 'bf16'"
step:
  name: train
  use: grid
  do: echo $nodes $batch $prec
"""

XML = """<?xml version="1.0"?>
<jube><benchmark name="zipped" outpath="run">
  <parameterset name="grid">
    <parameter name="nodes" type="int">1,2,4</parameter>
    <parameter name="batch" type="int">32,64,128</parameter>
    <parameter name="prec">fp16,bf16</parameter>
    <zip names="nodes,batch"/>
    <exclude>$nodes == 4 and '$prec' == 'bf16'</exclude>
  </parameterset>
  <step name="train"><use>grid</use><do>echo $nodes</do></step>
</benchmark></jube>
"""


@pytest.mark.parametrize(("suffix", "text"), [(".yaml", YAML), (".xml", XML)])
def test_zip_and_exclude(tmp_path, suffix, text):
    path = tmp_path / f"bench{suffix}"
    path.write_text(textwrap.dedent(text))
    plan = make_plan(load_one(str(path)), run_id=0)
    got = [(wp.id, wp.params().typed_values()["nodes"], wp.params().typed_values()["batch"], wp.params().typed_values()["prec"])
           for wp in plan.workpackages]
    assert got == [(0, 1, 32, "fp16"), (1, 1, 32, "bf16"), (2, 2, 64, "fp16"), (3, 2, 64, "bf16"),
                   (4, 4, 128, "fp16")]


def test_zip_of_unequal_lengths_is_an_error(tmp_path):
    path = tmp_path / "bench.yaml"
    path.write_text(YAML.replace('"32,64,128"', '"32,64"'))
    with pytest.raises(ExpandError, match="nodes has 3, batch has 2"):
        make_plan(load_one(str(path)), run_id=0)
