"""Helpers: histories written through caramel.consumers.history (the public API), temporary folders only."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.run_bench import isolated_env

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord

DATA = Path(__file__).parent / "data"


def record(path: Path, benchmark: str, rows: list[tuple[dict, list[float]]], metric: str = "elapsed",
           unit: str = "s", system: str = "", file: str = "", tags: list[str] | None = None,
           table: str = "t", key: str = "run1", direction: str = "lower") -> None:
    """One run of `benchmark` in the history at `path`: per configuration its samples of `metric`."""
    with History.open(str(path)) as history:
        run = RunRecord(run_key=key, benchmark=benchmark, file=file, tags=list(tags or []), system=system,
                        started=1.0)
        history.add(run, [Metric(table, {k: str(v) for k, v in config.items()}, metric, unit, direction, samples)
                          for config, samples in rows], replace=True)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    # one CPU layout for the test's own plans and bench's: the rule follows the load of the moment,
    # and a history made under one layout is another configuration than a plan under another
    from caramel.payloads.workloads.layout import forget_choice

    monkeypatch.setenv("CARAMEL_CPU_LAYOUT", "1x1")
    forget_choice()
    yield isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"),
                       CARAMEL_CPU_LAYOUT="1x1")
    forget_choice()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of tests/consumers/predict/data to run in."""
    target = tmp_path / "bench"
    shutil.copytree(DATA, target)
    return target
