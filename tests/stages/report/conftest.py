"""Runs made by caramel's engine from the benchmarks in tests/stages/report/data/benchmarks."""

import os
import shutil

import pytest

from caramel.stages.engine.session import start_run
from caramel.stages.spec.loader import load_one

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture
def run_example(tmp_path, monkeypatch):
    """run_example(name) -> run folder of a finished `bench run` of data/benchmarks/<name>.xml."""
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)

    def run(name: str, tags: set[str] | None = None) -> str:
        target = tmp_path / name
        target.mkdir()
        shutil.copy(os.path.join(DATA, "benchmarks", f"{name}.xml"), target)
        bench = load_one(str(target / f"{name}.xml"), tags)
        summary = start_run(bench, quiet=True, cwd=str(target))
        return summary.run_dir

    return run


def golden(name: str) -> str:
    with open(os.path.join(DATA, "jube", name)) as handle:
        return handle.read()
