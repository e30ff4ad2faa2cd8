"""The run lock cannot be lost to an unlink, names its holder, and never breaks another host's lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from caramel.errors import RunError
from caramel.stages.state import lock as lock_module
from caramel.stages.state.lock import LOCK_NAME, RunLock, holder_of

SRC = str(Path(lock_module.__file__).parents[3])


def hold(run_dir: Path, host: str | None = None) -> subprocess.Popen:
    """Another process holding the run (with `host` as its host name, to play one on another node)."""
    fake = f"import caramel.stages.state.lock as lock; lock._hostname = lambda: {host!r}\n" if host else ""
    code = fake + textwrap.dedent(f"""
        import sys, time
        from caramel.stages.state.lock import RunLock
        with RunLock({str(run_dir)!r}):
            print("held", flush=True)
            time.sleep(60)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": SRC})
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_unlinking_the_lock_file_does_not_free_the_run(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    try:
        (tmp_path / LOCK_NAME).unlink()  # what `rm -f *.lock` does
        with pytest.raises(RunError, match=f"busy: another bench \\(host .* pid {holder.pid};.*removed"):
            RunLock(str(tmp_path), wait=0.2).acquire()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(str(tmp_path)):  # the holder is gone: the kernel dropped its locks
        assert holder_of(str(tmp_path)).endswith("(this process)")


def test_a_replaced_lock_file_does_not_free_the_run(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    try:
        (tmp_path / "other").write_text("")
        os.replace(tmp_path / "other", tmp_path / LOCK_NAME)
        with pytest.raises(RunError, match="busy"):
            RunLock(str(tmp_path), wait=0.2).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_the_file_lock_alone_keeps_a_second_bench_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the folder's flock is local to a host (NFS), the byte-range lock on the file is what holds."""
    holder = hold(tmp_path)
    monkeypatch.setattr(lock_module, "_flock", lambda fd: None)  # the folder lock seen from another host
    try:
        with pytest.raises(RunError, match=f"pid {holder.pid} since"):
            RunLock(str(tmp_path), wait=0.2).acquire()
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_held_from_another_host_is_named_and_never_broken(tmp_path: Path) -> None:
    holder = hold(tmp_path, host="node-b17")
    try:
        with pytest.raises(RunError, match="host node-b17 pid") as caught:
            RunLock(str(tmp_path), wait=0.3).acquire()
        assert "another host (node-b17)" in caught.value.hint and "never broken" in caught.value.hint
    finally:
        holder.kill()
        holder.wait()


def test_reading_the_holder_in_the_holding_process_keeps_the_lock(tmp_path: Path) -> None:
    with RunLock(str(tmp_path)):
        assert f"pid {os.getpid()}" in holder_of(str(tmp_path))
        with open(tmp_path / LOCK_NAME, "rb"):
            pass  # closing another descriptor of the file must not drop the lock (POSIX locks would)
        probe = subprocess.run([sys.executable, "-c", f"from caramel.stages.state.lock import RunLock; "
                                f"RunLock({str(tmp_path)!r}).acquire()"],
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC})
        assert probe.returncode != 0 and "busy" in probe.stderr
