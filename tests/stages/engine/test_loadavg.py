"""The node's load at a workpackage's start and end (issue 21): read from /proc/loadavg where it
exists, nothing where it does not, and a workpackage flagged when the load exceeded its cores."""

from __future__ import annotations

from pathlib import Path

from caramel.stages.engine.loadavg import EVENT, overloaded, read_loadavg


def test_read_loadavg(tmp_path: Path) -> None:
    (tmp_path / "loadavg").write_text("3.25 2.10 1.00 4/512 12345\n")
    assert read_loadavg(str(tmp_path / "loadavg")) == 3.25
    assert read_loadavg(str(tmp_path / "absent")) is None  # no /proc: nothing recorded
    (tmp_path / "bad").write_text("")
    assert read_loadavg(str(tmp_path / "bad")) is None


def test_overloaded_names_the_load_and_the_cores() -> None:
    events = [(0.0, 1, EVENT, "start 1.50 cores=2"), (1.0, 1, EVENT, "end 1.90 cores=2"),
              (0.0, 2, EVENT, "start 0.20 cores=2"), (1.0, 2, EVENT, "end 3.20 cores=2"),
              (1.0, 3, "finish", ""), (1.0, 4, EVENT, "garbled")]
    assert overloaded(events) == {2: "load 3.20 > 2 cores at the end"}


def test_the_engine_reads_the_load_once_a_second(tmp_path: Path, monkeypatch) -> None:
    """Workpackages starting and ending within FRESH seconds share one reading (the kernel computes
    the averages every 5 s); a later one reads the file again."""
    from caramel.stages.engine import loadavg

    clock = [100.0]
    monkeypatch.setattr(loadavg.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(loadavg, "usable_cores", lambda: [0, 1])
    path = tmp_path / "loadavg"
    path.write_text("3.25 2.10 1.00 4/512 12345\n")
    sampler = loadavg.Sampler(str(path))
    assert sampler.reading() == "3.25 cores=2"
    path.write_text("0.50 2.10 1.00 4/512 12345\n")
    clock[0] += loadavg.FRESH / 2
    assert sampler.reading() == "3.25 cores=2"  # the same second: not read again
    clock[0] += loadavg.FRESH
    assert sampler.reading() == "0.50 cores=2"
    path.unlink()
    clock[0] += loadavg.FRESH
    assert sampler.reading() is None  # no /proc/loadavg: nothing recorded
