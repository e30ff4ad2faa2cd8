"""The CPU layout rule (caramel.payloads.workloads.layout): processes and threads from cores, NUMA nodes and load."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.payloads.workloads.layout import (
    Layout,
    cpu_layout,
    numa_nodes_holding,
    parse_cpulist,
    running_elsewhere,
)


def test_one_process_with_every_free_core_as_threads_per_numa_node() -> None:
    assert cpu_layout(2) == Layout(1, 2)
    # a trainer that wants data-parallel ranks (RULE_RANKS) gets them, one per free core at most
    assert cpu_layout(2, ranks=4) == Layout(2, 1)
    assert cpu_layout(16, ranks=4) == Layout(4, 4)
    assert cpu_layout(128, numa_nodes=8, ranks=4) == Layout(8, 16)
    assert cpu_layout(2, busy=1, ranks=4) == Layout(1, 1)
    assert cpu_layout(64, numa_nodes=2) == Layout(2, 32)
    assert cpu_layout(128, numa_nodes=8) == Layout(8, 16)
    assert cpu_layout(1) == Layout(1, 1)


def test_cores_other_processes_keep_busy_are_left_to_them() -> None:
    assert cpu_layout(2, busy=1) == Layout(1, 1)
    assert cpu_layout(2, busy=0.4) == Layout(1, 2)
    assert cpu_layout(2, busy=5) == Layout(1, 1)  # never fewer than one thread
    assert cpu_layout(64, numa_nodes=2, busy=10) == Layout(2, 27)
    assert cpu_layout(4, numa_nodes=4, busy=2) == Layout(2, 1)


@given(st.integers(1, 512), st.integers(1, 16), st.floats(0, 1000))
def test_the_layout_never_uses_more_cores_than_the_node_has(cores: int, numa: int, busy: float) -> None:
    layout = cpu_layout(cores, numa, busy)
    assert 1 <= layout.cores <= cores and layout.processes <= numa and layout.threads >= 1


def test_no_cores_is_an_error() -> None:
    with pytest.raises(ValueError, match="0 usable cores"):
        cpu_layout(0)


@given(st.sets(st.integers(0, 300), min_size=1))
def test_cpulist_round_trip(cpus: set[int]) -> None:
    ordered, parts, start = sorted(cpus), [], None
    for i, cpu in enumerate(ordered):  # write it as the kernel does: ranges of consecutive cpus
        start = cpu if start is None else start
        if i + 1 == len(ordered) or ordered[i + 1] != cpu + 1:
            parts.append(str(cpu) if start == cpu else f"{start}-{cpu}")
            start = None
    assert parse_cpulist(",".join(parts) + "\n") == cpus


def test_numa_nodes_are_counted_where_they_hold_usable_cores(tmp_path: Path) -> None:
    for node, cpulist in [("node0", "0-3"), ("node1", "4-7"), ("node2", "")]:
        (tmp_path / node).mkdir()
        (tmp_path / node / "cpulist").write_text(cpulist + "\n")
    (tmp_path / "possible").write_text("0-2\n")
    assert numa_nodes_holding({0, 1, 5}, tmp_path) == 2
    assert numa_nodes_holding({0, 1}, tmp_path) == 1
    assert numa_nodes_holding({0}, tmp_path / "absent") == 1


def test_tasks_running_elsewhere_leave_this_process_out(tmp_path: Path) -> None:
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.10 2.00 1.50 3/250 12345\n")
    assert running_elsewhere(samples=3, interval_s=0, loadavg=loadavg) == 2
    assert running_elsewhere(samples=1, loadavg=tmp_path / "absent") == 0


def test_the_layout_can_be_pinned(monkeypatch) -> None:
    from caramel.payloads.workloads import layout

    layout.forget_choice()
    monkeypatch.setenv("CARAMEL_CPU_LAYOUT", "2x3")
    try:
        assert layout.node_layout() == Layout(2, 3)
    finally:
        layout.forget_choice()
    assert layout.parse_layout(" 1 x 4 ") == Layout(1, 4)
    for bad in ["0x2", "2x0", "two", "1x", "2*2"]:
        with pytest.raises(ValueError, match="expected PROCESSESxTHREADS"):
            layout.parse_layout(bad)
