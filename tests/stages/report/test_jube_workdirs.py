"""caramel's analysis of the work folders of a real JUBE run gives JUBE's own table.

Needs JUBE 2.7.1 (`$JUBE`, default /tmp/jube-parity/jube-venv/bin/jube, made by
/work/shared/tools/jube-parity); skipped without it.
"""

import os
import shutil
import subprocess

import pytest

from caramel.stages.analyse import from_plan
from caramel.stages.expand.plan import make_plan
from caramel.stages.report.results import make_results
from caramel.stages.report.table import render
from caramel.stages.spec.loader import load_one

from .conftest import DATA, golden

JUBE = os.environ.get("JUBE", "/tmp/jube-parity/jube-venv/bin/jube")


@pytest.mark.skipif(not os.access(JUBE, os.X_OK), reason="JUBE 2.7.1 is not installed here")
@pytest.mark.parametrize("name", ["files", "statistics", "chain"])
def test_analysis_of_jube_work_folders(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    shutil.copy(os.path.join(DATA, "benchmarks", f"{name}.xml"), tmp_path)
    subprocess.run([JUBE, "run", "--hide-animation", f"{name}.xml"], check=True, capture_output=True)
    plan = make_plan(load_one(str(tmp_path / f"{name}.xml")), run_id=0)  # JUBE's numbering and folders
    made = make_results(from_plan(plan))
    assert "".join(render(m.data, "csv") + "\n" for m in made) == golden(f"{name}.csv.txt")
