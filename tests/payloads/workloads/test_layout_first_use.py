"""A shipped CPU trainer's layout is measured once per node, on the first `bench run` that plans it
for a system running here, and kept (payloads/workloads/layout.measure_on_first_use; the CLI's
measurer is `bench layout --measure`'s). `bench plan`, another system, a loaded node,
$CARAMEL_LAYOUT_MEASURE=never and $CARAMEL_CPU_LAYOUT never measure."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from caramel.payloads.workloads import layout, layout_store
from caramel.payloads.workloads.layout import LayoutSource
from caramel.payloads.workloads.layout_store import Measurement, NodeIdentity


@pytest.fixture
def quiet_node(monkeypatch, tmp_path: Path):
    """A quiet 2-core node with nothing stored, first-use measurement allowed; the measurer stores a
    1x2 winner (the rule's answer for the GPT trainer is 2x1) and counts its calls."""
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CARAMEL_LAYOUT_MEASURE", "auto")
    monkeypatch.delenv("CARAMEL_CPU_LAYOUT", raising=False)
    monkeypatch.setattr(layout, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(layout, "numa_nodes_holding", lambda cpus: 1)
    monkeypatch.setattr(layout, "running_elsewhere", lambda: 0.0)
    calls: list[str] = []

    def measurer(workload: str) -> None:
        calls.append(workload)
        figures = {"1x2": [19000.0, 19100.0], "2x1": [17000.0, 17100.0]}
        date = datetime.now(timezone.utc).replace(microsecond=0)
        layout_store.save(layout.store_file(), Measurement(
            workload, "1x2", "tokens/s", date, NodeIdentity.here({0, 1}), "", 30, 2, 40.0, figures))

    layout.measure_on_first_use(measurer)
    yield calls
    layout.measure_on_first_use(None)


def test_the_first_run_here_measures_and_later_ones_keep_it(quiet_node):
    first = layout.layout_choice("gpt", runs_here=True)
    assert quiet_node == ["gpt"] and first.source is LayoutSource.MEASURED
    assert first.layout == layout.Layout(1, 2)  # the measurement's winner, not the rule's 2x1
    layout.forget_choice()
    again = layout.layout_choice("gpt", runs_here=True)
    assert quiet_node == ["gpt"] and again.layout == layout.Layout(1, 2)  # kept: measured once


def test_a_plan_another_system_or_never_takes_the_rule(quiet_node, monkeypatch):
    assert layout.layout_choice("gpt").source is LayoutSource.RULE  # not a run on this node
    layout.forget_choice()
    monkeypatch.setenv("CARAMEL_LAYOUT_MEASURE", "never")
    assert layout.layout_choice("gpt", runs_here=True).source is LayoutSource.RULE
    layout.forget_choice()
    monkeypatch.setenv("CARAMEL_CPU_LAYOUT", "1x1")
    monkeypatch.setenv("CARAMEL_LAYOUT_MEASURE", "auto")
    assert layout.layout_choice("gpt", runs_here=True).source is LayoutSource.ENVIRONMENT
    assert quiet_node == []


def test_a_loaded_node_is_not_measured(quiet_node, monkeypatch):
    monkeypatch.setattr(layout, "running_elsewhere", lambda: 1.0)
    choice = layout.layout_choice("gpt", runs_here=True)
    assert choice.source is LayoutSource.RULE and "busy" in choice.why and quiet_node == []


def test_only_a_local_cpu_system_runs_here(monkeypatch):
    from caramel.adapters.systems.model import System

    seen: list[bool] = []
    original = layout.layout_choice

    def spy(trainer: str, runs_here: bool = False) -> layout.LayoutChoice:
        seen.append(runs_here)
        return original(trainer, runs_here)

    monkeypatch.setattr(layout, "layout_choice", spy)
    System("local").cpu_layout("gpt")
    System("gpu", gpus_per_node=4, accelerator="nvidia").cpu_layout("gpt")
    System("cluster", scheduler="slurm").cpu_layout("gpt")
    assert seen == [True, False, False]
