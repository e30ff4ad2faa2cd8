"""Work done beside the caller in a forked child process: a command's wall time on the spare cores of
a login node (`bench dashboard` reads half a big history, and writes the CSV of every figure, while
the main process does the rest).

The child is only ever a shortcut. Its result comes back pickled through a pipe; where there is no
fork, only one CPU to run on, or the child fails in any way (an exception, a signal, a result that
does not unpickle), the caller does the work itself when it asks for the result, so an error is
raised there, as it would be without a child, never lost in the child. A child forked from a
process keeps none of its parent's clean-up: it leaves by os._exit, so no buffered output, atexit
handler or temporary file of the parent is flushed, run or removed twice.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, NoReturn, TypeVar

T = TypeVar("T")

_OK = b"\x01"  # the first byte of a child's answer that holds a result
# a child silent this long is stopped and its work done here: a bug, never a wait for ever (the
# work given to a child takes seconds: a tenth of a big history)
SILENCE_S = 300.0


def spare_cpus() -> int:
    """The CPUs this process may run on, less the one it runs on (sched_getaffinity: a SLURM
    allocation's or taskset's cores, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) - 1
    except (AttributeError, OSError):  # not Linux
        return (os.cpu_count() or 1) - 1


def can_fork() -> bool:
    """A fork that can help and cannot hang: a spare CPU, and no other Python thread (one holding a
    lock inside SQLite or the allocator at the fork would leave the child waiting on it for ever)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and spare_cpus() > 0


class Forked(Generic[T]):
    """`work()` started in a forked child now (or, where none can be, run at `result()`):

        with Forked(lambda: read_part(path, split)) as part:
            ... the caller's own work ...
            value = part.result()

    Leaving the `with` block without asking for the result waits for the child and drops it."""

    def __init__(self, work: Callable[[], T], fork: bool | None = None) -> None:
        self.work = work
        self.pid: int | None = None
        self.pipe = -1
        if can_fork() if fork is None else fork:
            self._start()

    def _start(self) -> None:
        for stream in (sys.stdout, sys.stderr):  # nothing the parent buffered is written twice
            stream.flush()
        read_end, write_end = os.pipe()
        # Memory: the two processes share the parent's pages until one writes to them. Memory the
        # parent freed but still holds is given back first (malloc_trim), or either process would
        # copy those pages as it reuses them; a garbage collection walks every object and writes to
        # each one's header, so the parent's objects are frozen out of its collections until the
        # child is done, and the child, gone in seconds, collects nothing (reference counts free
        # what it makes). docs/dashboard.md: the processes' memory together, measured.
        _release_free_memory()
        _freeze()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a login node's limit on a user's processes): done here
            for end in (read_end, write_end):
                os.close(end)
            _unfreeze()
            return
        if pid == 0:  # the child: its answer, then gone, whatever happened
            gc.disable()
            os.close(read_end)
            _answer(self.work, write_end)
        os.close(write_end)
        self.pid, self.pipe = pid, read_end

    def result(self) -> T:
        """The child's result, or the work done here when the child gave none."""
        answer = self._collect()
        if answer[:1] == _OK:
            try:
                return pickle.loads(answer[1:])  # noqa: S301 - our own child's answer, never another's
            except Exception:  # a result that does not unpickle: done here
                pass
        return self.work()

    def _collect(self) -> bytes:
        """What the child wrote (read to its end before waiting: a full pipe would stop it), the child reaped."""
        if self.pid is None:
            return b""
        parts = []
        try:
            while select.select([self.pipe], [], [], SILENCE_S)[0]:
                part = os.read(self.pipe, 1 << 20)
                if not part:
                    break
                parts.append(part)
            else:  # silent too long: stopped, its answer dropped
                os.kill(self.pid, signal.SIGKILL)
                parts = []
        finally:
            os.close(self.pipe)
            _, status = os.waitpid(self.pid, 0)
            self.pid = None
            _unfreeze()
        return b"".join(parts) if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else b""

    def drop(self) -> None:
        """The child waited for and its result dropped (the caller no longer needs the work)."""
        self._collect()

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()


def _release_free_memory() -> None:
    """glibc's malloc_trim: the free memory of the C heap back to the system (elsewhere: nothing)."""
    try:
        import ctypes  # here: only a fork needs it

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # no glibc
        pass


_frozen = [0]  # children running: the parent's objects stay frozen until the last is done


def _freeze() -> None:
    if not _frozen[0]:
        gc.freeze()
    _frozen[0] += 1


def _unfreeze() -> None:
    _frozen[0] -= 1
    if not _frozen[0]:
        gc.unfreeze()


def _answer(work: Callable[[], object], pipe: int) -> NoReturn:
    """In the child: `work()`'s result written to `pipe`, then os._exit (0 with a result, 1 without)."""
    code = 1
    try:
        data = _OK + pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(pipe, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent does the work itself
        pass
    finally:
        os._exit(code)
