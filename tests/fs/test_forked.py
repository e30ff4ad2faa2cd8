"""fs.forked: work done in a forked child comes back whole; a child that fails, or none at all,
leaves the work to the caller, whose error is the one raised; no child is left behind."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from caramel.fs import forked
from caramel.fs.forked import Forked


def test_the_result_comes_from_the_child() -> None:
    parent = os.getpid()
    with Forked(lambda: (os.getpid(), np.arange(300_000)), fork=True) as child:
        pid, values = child.result()
    assert pid != parent  # done in another process
    assert np.array_equal(values, np.arange(300_000))  # more than a pipe holds at once, whole


def test_without_a_fork_the_work_is_done_at_result() -> None:
    done: list[int] = []
    child = Forked(lambda: done.append(os.getpid()) or 7, fork=False)
    assert not done and child.pid is None
    assert child.result() == 7 and done == [os.getpid()]


def test_a_child_that_dies_leaves_the_work_to_the_parent() -> None:
    parent = os.getpid()

    def work() -> int:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return os.getpid()

    assert Forked(work, fork=True).result() == parent


def test_an_error_in_the_child_is_raised_by_the_parent_doing_the_work() -> None:
    calls: list[int] = []

    def work() -> None:
        calls.append(os.getpid())
        raise ValueError("bad input named here")

    with pytest.raises(ValueError, match="bad input named here"):
        Forked(work, fork=True).result()
    assert calls == [os.getpid()]  # the parent's own try (the child's list is its own copy)


def test_leaving_without_the_result_reaps_the_child() -> None:
    with Forked(lambda: 1, fork=True) as child:
        pid = child.pid
    assert pid is not None and child.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left


def test_nothing_buffered_is_written_twice(capfd: pytest.CaptureFixture[str]) -> None:
    print("once", end="")  # buffered: a child flushing its copy would write it again
    Forked(lambda: print("child") or 1, fork=True).result()
    out = capfd.readouterr().out
    assert out.count("once") == 1 and "child" in out  # the parent's text flushed before the fork, once


def test_one_cpu_means_no_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert forked.spare_cpus() == 0 and not forked.can_fork()
    assert Forked(lambda: 2).pid is None


def test_a_silent_child_is_stopped_and_its_work_done_here(monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()
    monkeypatch.setattr(forked, "SILENCE_S", 0.5)

    def work() -> int:
        if os.getpid() != parent:
            signal.pause()  # a child that never answers
        return parent

    assert Forked(work, fork=True).result() == parent


def test_no_child_beside_another_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forked.can_fork()
    finally:
        stop.set()
        thread.join()
    monkeypatch.setattr(forked, "spare_cpus", lambda: 1)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)  # (a suite may leave threads running)
    assert forked.can_fork()


def test_a_fork_refused_leaves_the_work_to_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    child = Forked(lambda: os.getpid(), fork=True)
    assert child.pid is None and child.result() == os.getpid()
    assert forked._frozen == [0]
