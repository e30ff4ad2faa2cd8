"""One bench at a time per run: an exclusive `flock` on `<run dir>/caramel.lock`.

The kernel drops the lock when its holder dies (even by SIGKILL), so a crashed bench never leaves
a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time

from caramel.errors import RunError

LOCK_NAME = "caramel.lock"


class RunLock:
    """`with RunLock(run_dir):` holds the run; a second holder waits `wait` seconds, then gets RunError."""

    def __init__(self, run_dir: str, wait: float = 0.0) -> None:
        self.path = os.path.join(run_dir, LOCK_NAME)
        self.wait = wait
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read(fd)
                    os.close(fd)
                    raise RunError(f"run {os.path.dirname(self.path)} is busy: another bench "
                                   f"({holder or 'unknown process'}) works on it",
                                   hint="wait until it ends, or see its progress with bench status") from None
                time.sleep(0.1)
        # Who holds it, for the message another bench prints (not used for locking itself).
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 100, 0).decode(errors="replace").strip()
    except OSError:
        return ""
