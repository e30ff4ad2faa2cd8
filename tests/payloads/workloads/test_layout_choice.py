"""Which layout the trainers take (caramel.payloads.workloads.layout.layout_choice): $CARAMEL_CPU_LAYOUT, else
a measurement stored for this node (layout_store), fitted to the free cores, else the rule; and the
stored file itself (its decoder, property-based)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.payloads.workloads import layout, layout_store
from caramel.payloads.workloads.layout import Layout, LayoutSource, fit_to_free
from caramel.payloads.workloads.layout_store import (
    Measurement,
    NodeIdentity,
    StoredLayoutError,
    decode,
    encode,
)

NOW = datetime.now(timezone.utc).replace(microsecond=0)


def here() -> NodeIdentity:
    return NodeIdentity.here({0, 1})


def measured(winner: str = "2x1", node: NodeIdentity | None = None, date: datetime = NOW,
             workload: str = "gpt") -> Measurement:
    figures = {"1x1": [15000.0, 15100.0, 14900.0], "1x2": [17200.0, 17000.0, 17300.0],
               "2x1": [19500.0, 19400.0, 19600.0]}
    figures[winner] = [19500.0, 19400.0, 19600.0]
    return Measurement(workload, winner, "tokens/s", date, node or here(), "--num-layers 2", 30, 3, 48.0, figures)


@pytest.fixture
def node(monkeypatch, tmp_path: Path):
    """A quiet 2-core node, one NUMA node, caramel's data folder in tmp; `node(busy=1)` keeps a core busy."""
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CARAMEL_CPU_LAYOUT", raising=False)
    monkeypatch.setattr(layout, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(layout, "numa_nodes_holding", lambda cpus: 1)
    layout_store._warned.clear()

    def choose(busy: float = 0.0, workload: str = "gpt") -> layout.LayoutChoice:
        monkeypatch.setattr(layout, "running_elsewhere", lambda: busy)
        layout.forget_choice()
        return layout.layout_choice(workload)

    yield choose
    layout.forget_choice()


def store(*measurements: Measurement) -> str:
    path = layout.store_file()
    for m in measurements:
        layout_store.save(path, m)
    return path


def test_without_a_measurement_the_rule_decides_and_says_so(node) -> None:
    assert layout.STORE_NAME == layout_store.FILE_NAME
    choice = node()  # GPT: a data-parallel rank per free core (RULE_RANKS)
    assert (choice.layout, choice.source) == (Layout(2, 1), LayoutSource.RULE)
    assert choice.describe() == "2x1 (rule)"
    assert node(workload="resnet").describe() == "1x2 (rule)"  # ResNet: threads
    assert node(busy=1).describe() == "1x1 (rule; 1 core(s) busy)"


def test_a_stored_measurement_of_this_node_is_used_and_shown(node) -> None:
    store(measured("2x1"))
    choice = node()
    assert (choice.layout, choice.source) == (Layout(2, 1), LayoutSource.MEASURED)
    assert choice.describe() == f"2x1 (measured {NOW.date().isoformat()}: 2x1 19.5k vs 1x2 17.2k tokens/s)"
    assert layout.node_layout() == Layout(2, 1)
    assert node(workload="resnet").source == LayoutSource.RULE  # measured for gpt only


@pytest.mark.parametrize("other, why", [
    (NodeIdentity("another-host", "0-1", "x"), "host 'another-host'"),
    (None, "usable CPUs '0-3'"),
    (None, "torch '0.0.1'"),
    (None, "days ago"),
])
def test_a_measurement_of_another_node_or_torch_or_too_old_is_ignored(node, capsys, other, why) -> None:
    mine = here()
    if other is None and "CPUs" in why:
        other = NodeIdentity(mine.host, "0-3", mine.torch)
    elif other is None and "torch" in why:
        other = NodeIdentity(mine.host, mine.cpus, "0.0.1")
    elif other is not None:
        other = NodeIdentity(other.host, mine.cpus, mine.torch)
    date = NOW - timedelta(days=layout_store.MAX_AGE_DAYS + 1) if "days" in why else NOW
    store(measured("1x2", other, date))
    choice = node()
    assert (choice.layout, choice.source) == (Layout(2, 1), LayoutSource.RULE)
    assert why in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "{not json", "[]", '{"format": "caramel cpu layout", "version": 9}',
                                  '{"format": "caramel cpu layout", "version": 1, "measurements": [{"layout": 1}]}',
                                  "\udcff"])
def test_a_damaged_file_is_a_warning_naming_it_and_the_rule_decides(node, capsys, text) -> None:
    path = layout.store_file()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(text)
    choice = node()
    assert choice.source == LayoutSource.RULE
    err = capsys.readouterr().err
    assert f"warning: the stored CPU layout {path}" in err and "Traceback" not in err
    node(workload="resnet")  # read again for the other trainer: warned once
    assert capsys.readouterr().err == ""


def test_the_environment_variable_wins_over_a_measurement(node, monkeypatch) -> None:
    store(measured("2x1"))
    monkeypatch.setenv("CARAMEL_CPU_LAYOUT", "1x2")
    choice = node()
    assert (choice.layout, choice.source) == (Layout(1, 2), LayoutSource.ENVIRONMENT)
    assert choice.describe() == "1x2 (CARAMEL_CPU_LAYOUT)"


@pytest.mark.parametrize("winner", ["1x2", "2x1"])
def test_busy_cores_cut_a_measured_favourite(node, winner) -> None:
    store(measured(winner))
    choice = node(busy=1)
    assert (choice.layout, choice.source) == (Layout(1, 1), LayoutSource.MEASURED)
    assert f"cut from {winner}: 1 of 2 cores busy" in choice.describe()
    assert "," not in choice.describe()  # a python parameter's value: a comma would split it into two values


def test_fit_to_free_cuts_threads_first_then_processes() -> None:
    assert fit_to_free(Layout(2, 4), 8) == Layout(2, 4)
    assert fit_to_free(Layout(2, 4), 6) == Layout(2, 3)
    assert fit_to_free(Layout(4, 1), 2) == Layout(2, 1)
    assert fit_to_free(Layout(1, 8), 1) == Layout(1, 1)


def test_saving_replaces_its_workload_only_and_never_writes_through_a_link(node, tmp_path: Path) -> None:
    path = Path(layout.store_file())
    path.parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    path.symlink_to(victim)
    store(measured("2x1"), measured("1x1", workload="resnet"), measured("1x2"))
    assert victim.read_text() == "keep" and not path.is_symlink()
    assert {(m.workload, m.layout) for m in layout_store.read(str(path))} == {("gpt", "1x2"), ("resnet", "1x1")}


# ---- the decoder ----

layouts = st.builds(lambda p, t: f"{p}x{t}", st.integers(1, 64), st.integers(1, 64))
samples = st.lists(st.floats(min_value=1e-3, max_value=1e9, allow_nan=False), min_size=1, max_size=5)
measurements = st.builds(
    lambda figures, pick, workload, host, cpus, torch, shape, iters, seconds, days: Measurement(
        workload, sorted(figures)[pick % len(figures)], "tokens/s", NOW - timedelta(days=days),
        NodeIdentity(host, cpus, torch), shape, iters, 3, seconds, figures),
    st.dictionaries(layouts, samples, min_size=1, max_size=4), st.integers(0, 10), st.sampled_from(["gpt", "resnet"]),
    st.text(max_size=20), st.text(max_size=20), st.text(max_size=20), st.text(max_size=40), st.integers(0, 10**6),
    st.floats(min_value=0, max_value=1e6), st.integers(0, 3650))


@given(st.lists(measurements, max_size=3))
def test_the_decoder_reads_what_the_encoder_writes(stored: list[Measurement]) -> None:
    again = decode(encode(stored))
    assert [(m.workload, m.layout, m.date, m.node, m.shape, m.iterations) for m in again] == \
           [(m.workload, m.layout, m.date, m.node, m.shape, m.iterations) for m in stored]
    for a, b in zip(again, stored, strict=True):
        assert a.figures.keys() == b.figures.keys()
        assert all(abs(x - y) <= 1e-3 for name in a.figures for x, y in zip(a.figures[name], b.figures[name], strict=True))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                        max_size=4), max_leaves=20)


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps), measurements.map(lambda m: encode([m])).flatmap(
    lambda text: st.integers(0, len(text)).map(lambda cut: text[:cut]))))
def test_the_decoder_raises_only_its_own_error_on_any_text(text: str) -> None:
    try:
        decode(text)
    except StoredLayoutError:
        pass


@given(measurements, st.sampled_from(["layout", "date", "figures", "iterations", "host", "workload"]),
       json_values)
def test_a_field_of_the_wrong_kind_is_named(m: Measurement, key: str, value: object) -> None:
    data = json.loads(encode([m]))
    data["measurements"][0][key] = value
    try:
        decode(json.dumps(data))
    except StoredLayoutError as exc:
        assert key in str(exc) or "figures" in str(exc) or "winner" in str(exc)


@pytest.mark.parametrize("unit", ["tokens/s'; touch pwned; '", "$(id)", "tokens/s\nrm", ""])
def test_a_unit_that_is_not_one_is_refused(unit: str) -> None:
    """The unit reaches a shell command line through the layout's summary (llm.yaml --layout-choice):
    a stored file's unit with a quote, `$`, a newline (or none) is refused, naming the field."""
    data = json.loads(encode([measured()]))
    data["measurements"][0]["unit"] = unit
    with pytest.raises(StoredLayoutError, match="'unit'"):
        decode(json.dumps(data))
    assert decode(encode([measured()]))[0].unit == "tokens/s"


def test_without_a_stored_file_planning_never_imports_the_store(tmp_path: Path) -> None:
    """`bench run` plans llm.yaml through layout_choice(): the store (json, socket, datetime) only where a file is."""
    import subprocess
    import sys

    code = ("import sys; from caramel.payloads.workloads import layout; print(layout.layout_choice().source.value, "
            "'caramel.payloads.workloads.layout_store' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARAMEL_")}
    done = subprocess.run([sys.executable, "-c", code], env={**env, "CARAMEL_DATA_DIR": str(tmp_path)},
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["rule", "False"]


def test_one_decision_per_process_however_the_load_moves(node, monkeypatch) -> None:
    """A plan asks for the processes, the threads and what chose them in three parameters (llm.yaml:
    `node_layout()` twice, `layout_choice()` once): all three are one decision, even when the node's
    load changes between the calls (it gave a job 1 thread and a table saying `1x2 (rule)`)."""
    node(busy=0.0)
    layout.forget_choice()
    loads = iter([1.0, 0.0, 0.0, 0.0])
    monkeypatch.setattr(layout, "running_elsewhere", lambda: next(loads))
    threads = layout.node_layout().threads
    described = layout.layout_choice().describe()
    assert described.startswith(f"1x{threads} ") and threads == 1
