"""One bench at a time per run, on one host or several.

Two locks, both dropped by the kernel when their holder dies (even by SIGKILL), so a crashed bench
never leaves a stale lock behind:

- an exclusive `flock` on the run folder itself (a directory file descriptor). It cannot be lost to
an
  unlink: `rm -f *.lock` removes a name, never the folder, so a second bench on the host still finds
  the run held. Lustre (mounted with `flock`), GPFS, BeeGFS and CephFS carry it between hosts too.
- an exclusive byte-range lock (`fcntl`: open-file-description locks where the kernel has them,
POSIX
  locks otherwise) on `<run dir>/caramel.lock`: NFS carries these between hosts (NLM, NFSv4), where
  it keeps a directory's flock local. After taking it the file's inode is checked against the name,
  so a lock taken on a file another process just removed or replaced is taken again on the new one.

The holder writes `host H pid P since T` into the lock file, so a second bench names it; when that
file was removed, a holder on the same host is found by its folder lock in /proc/locks. A lock held
from another host is never broken: caramel cannot see whether that bench is alive, and says so.
A filesystem that gives no locks at all (Lustre mounted `noflock`) is told in a notice, not refused.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import sys
import time
from collections.abc import Callable

from caramel.errors import RunError

LOCK_NAME = "caramel.lock"
# errnos of a filesystem that has no locks (as opposed to a lock held by someone)
NO_LOCKS = {errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL}
_HELD: dict[
    tuple[int, int], str
] = {}  # (device, inode) of run folders this process holds -> holder line


def _hostname() -> str:
    """This host's name, as socket.gethostname() gives it (uname's nodename), without importing
    socket: every `bench run` takes this lock, and socket costs it about 2 ms of CPU."""
    return os.uname().nodename


class RunLock:
    """`with RunLock(run_dir):` holds the run; a second holder waits `wait` seconds, then gets
    RunError."""

    def __init__(self, run_dir: str, wait: float = 0.0) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOCK_NAME)
        self.wait = wait
        self.fd: int | None = None
        self.dir_fd: int | None = None

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait
        while True:
            dir_fd = os.open(self.run_dir, os.O_RDONLY | os.O_DIRECTORY)
            if _try(_flock, dir_fd):
                fd = self._lock_file()
                if fd is not None:
                    break
            os.close(dir_fd)
            if time.monotonic() >= deadline:
                raise self._busy() from None
            time.sleep(0.1)
        self.fd, self.dir_fd = fd, dir_fd
        line = f"host {_hostname()} pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%S%z')}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode(), 0)
        stat = os.fstat(dir_fd)
        _HELD[(stat.st_dev, stat.st_ino)] = line

    def _lock_file(self) -> int | None:
        """The lock file's descriptor, locked; None when another bench holds it. Taken again when
        the name points to another inode once locked (removed or replaced in between)."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            if not _try(_range_lock, fd):
                os.close(fd)
                return None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path, follow_symlinks=False))
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)

    def _busy(self) -> RunError:
        holder = holder_of(self.run_dir) or "unknown process"
        here = _hostname()
        hint = "wait until it ends, or see its progress with bench status"
        if holder.startswith("host ") and holder.split()[1] != here:
            hint = (
                f"it runs on another host ({holder.split()[1]}), "
                "where caramel cannot see whether it is alive, so the lock is never broken from "
                "here: wait for it, or end it on that host; the file server frees the lock of a "
                "bench that died"
            )
        return RunError(
            f"run {self.run_dir} is busy: another bench ({holder}) works on it", hint=hint
        )

    def release(self) -> None:
        if self.dir_fd is not None:
            stat = os.fstat(self.dir_fd)
            _HELD.pop((stat.st_dev, stat.st_ino), None)
        for fd in (self.fd, self.dir_fd):
            if fd is not None:
                os.close(fd)  # closing drops the lock
        self.fd = self.dir_fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder_of(run_dir: str) -> str | None:
    """Who holds the run (`host H pid P since T`), as far as can be told without taking its lock;
    None when nobody is known to."""
    try:
        stat = os.stat(run_dir)
    except OSError:
        return None
    if (stat.st_dev, stat.st_ino) in _HELD:
        return _HELD[(stat.st_dev, stat.st_ino)] + " (this process)"
    try:
        # Read without opening for writing, and closed at once: a reader never holds a lock itself.
        with open(os.path.join(run_dir, LOCK_NAME), "rb") as file:
            text = file.read(200).decode(errors="replace").strip()
        if text:
            return text
    except OSError:
        pass
    pid = _folder_lock_pid(stat)
    return f"host {_hostname()} pid {pid}; its lock file {LOCK_NAME} was removed" if pid else None


def _folder_lock_pid(stat: os.stat_result) -> int | None:
    """The pid holding a flock on the folder `stat` describes, from /proc/locks (this host only)."""
    want = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as lines:
            for line in lines:
                fields = line.split()
                if (
                    len(fields) >= 6
                    and fields[1] == "FLOCK"
                    and fields[5] == want
                    and fields[4].isdigit()
                ):
                    return int(fields[4])
    except OSError:
        return None
    return None


def _flock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _range_lock(fd: int) -> None:
    """An exclusive lock on the whole file: per open file description where the kernel has them (so
    closing another descriptor of the file in this process cannot drop it), a POSIX lock
    otherwise."""
    ofd = getattr(fcntl, "F_OFD_SETLK", None)
    if ofd is not None and struct.calcsize("l") == 8:
        # struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks).
        fcntl.fcntl(fd, ofd, struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
    else:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _try(lock: Callable[[int], None], fd: int) -> bool:
    """True when `lock(fd)` took the lock or the filesystem has no locks (told once); False when
    held."""
    try:
        lock(fd)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        if exc.errno not in NO_LOCKS:
            raise
    print(
        "note: this filesystem gives no file locks: bench cannot keep a second bench off this run "
        "(Lustre: mount with -o flock)",
        file=sys.stderr,
    )
    return True
