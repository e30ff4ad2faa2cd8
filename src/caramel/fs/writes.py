"""Writes that never follow a link and never leave a half-written file.

`replacing(path)` writes a new file beside the old one (a temporary name in the same folder, opened
with `O_EXCL | O_NOFOLLOW` through the folder's descriptor) and renames it over the old one when the
whole text is written: a reader sees the old file or the new one, a failed write (a full disk)
leaves the old one intact, and a link at `path` is replaced by the new file, never written through.
With `root` (a run folder), every folder between `root` and the file is opened with `O_NOFOLLOW`
too, so a link planted in a run folder someone else made (`result -> ~/`) cannot lead a write out of
it. Every OSError becomes a `FileError` naming the path and its cause (fs.oserrors).

An output is written where the user pointed (`Target`): a regular file or a new path by the replace
above; a character device (`/dev/null`, a terminal) or a FIFO written through, never replaced (a
link the user named that leads to one is followed, outside a run folder); `-` is standard output;
anything else (a folder, a socket, a block device) is refused, nothing written.

A write killed before its rename leaves its temporary file, named `.NAME.HOST.PID.RANDOM.tmp`
(`TEMP_NAME`); the next write to NAME removes those of a process that is gone (same host) or that
are older than `STALE_AFTER_S` (a writer on another host of a shared file system).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from enum import Enum
from typing import IO, Any, Literal, overload

from caramel.fs.oserrors import FileError, file_error
from caramel.fs.paths import PathError, is_within

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
STREAM_FLAGS = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC  # a device or FIFO: opened, never made
STDOUT = "-"
STALE_AFTER_S = 24 * 3600  # no write of caramel takes a day: a temporary file that old is left over
TEMP_NAME = re.compile(r"^\.(?P<base>.+)\.(?P<host>[^.]*)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$")


class Target(str, Enum):
    """What an output path is, and so how it is written."""

    FILE = "file"  # a regular file or a new name: replaced whole
    STREAM = "stream"  # a character device or a FIFO: written through
    STDOUT = "stdout"  # `-`


def open_folder(folder: str, root: str | None = None, create: bool = True) -> int:
    """A descriptor of `folder`; below `root` each component is opened without following a link
    (and made when missing, if `create`). Without `root` the folder is taken as the user named
    it."""
    folder = os.path.abspath(folder)
    if root is None:
        if create:
            os.makedirs(folder, exist_ok=True)
        return os.open(folder, DIR_FLAGS)
    root = os.path.abspath(root)
    if not is_within(root, folder):
        raise PathError(
            f"{folder} is outside {root}", hint="caramel writes a run's files inside its run folder"
        )
    return _walk_down(root, folder, create)


def _walk_down(root: str, folder: str, create: bool) -> int:
    """A descriptor of `folder`, opened a component at a time from `root`."""
    fd = os.open(root, DIR_FLAGS)
    current = root
    try:
        for part in os.path.relpath(folder, root).split(os.sep):
            if part in ("", "."):
                continue
            current = os.path.join(current, part)
            child = _child_folder(fd, part, current, create)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _child_folder(fd: int, part: str, path: str, create: bool) -> int:
    """A descriptor of the folder `part` in the folder open at `fd` (made when missing, if
    `create`), a link not followed; an error names its `path`."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o777, dir_fd=fd)
    try:
        return os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR and os.path.islink(path):
            raise OSError(errno.ELOOP, "a symbolic link", path) from None
        exc.filename = path
        raise


def target_of(path: str, root: str | None = None) -> Target:
    """How `path` is written (see the module); a folder, a socket or a block device: FileError."""
    if path == STDOUT:
        return Target.STDOUT
    try:
        st = os.stat(path, follow_symlinks=root is None)  # inside a run folder no link is followed
    except FileNotFoundError:
        return Target.FILE
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            return Target.FILE  # the writer names the folder on the way
        raise file_error(exc, path, "write") from None
    return _target_by_mode(path, st.st_mode)


def _target_by_mode(path: str, mode: int) -> Target:
    """A regular file or a link: replaced; a character device or FIFO: written through; else a
    FileError saying what it is."""
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return Target.FILE
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return Target.STREAM
    raise FileError(
        f"cannot write {path}: it is {_unwritable(mode)}; nothing was written",
        hint="name a file (it is replaced whole), a character device or FIFO (written "
        "through), or - for standard output",
        errno_=errno.EISDIR if stat.S_ISDIR(mode) else None,
    )


def _unwritable(mode: int) -> str:
    """What a file of `mode` is that caramel does not write: a folder, a socket, ..."""
    return next((what for test, what in _UNWRITABLE if test(mode)), "not a regular file")


_UNWRITABLE = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISBLK, "a block device"),
)


@overload
def replacing(
    path: str,
    root: str | None = None,
    binary: Literal[False] = False,
    encoding: str = "utf-8",
    newline: str | None = None,
) -> AbstractContextManager[IO[str]]: ...


@overload
def replacing(
    path: str,
    root: str | None = None,
    *,
    binary: Literal[True],
    encoding: str = "utf-8",
    newline: str | None = None,
) -> AbstractContextManager[IO[bytes]]: ...


@contextlib.contextmanager  # text or bytes as `binary` says (the overloads above)
def replacing(
    path: str,
    root: str | None = None,
    binary: bool = False,
    encoding: str = "utf-8",
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """`with replacing(path) as handle:` writes `path` whole or not at all, a device or FIFO
    through, `-` to standard output (see the module)."""
    kind = target_of(path, root)
    if kind is Target.STDOUT:
        sys.stdout.flush()
        yield sys.stdout.buffer if binary else sys.stdout
        sys.stdout.flush()
        return
    if kind is Target.STREAM:
        with _through(path, binary, encoding, newline) as handle:
            yield handle
        return
    with _replaced(path, root, binary, encoding, newline) as handle:
        yield handle


@contextlib.contextmanager
def _through(path: str, binary: bool, encoding: str, newline: str | None) -> Iterator[IO[Any]]:
    """A character device or FIFO, opened for writing as it is (a FIFO waits for its reader)."""
    try:
        fd = os.open(path, STREAM_FLAGS)
        with _file(fd, binary, encoding, newline) as handle:
            yield handle
    except OSError as exc:
        raise file_error(exc, path, "write") from None


def _file(fd: int, binary: bool, encoding: str, newline: str | None) -> IO[Any]:
    """The descriptor as a file object, bytes or text as `binary` says."""
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding=encoding, newline=newline)


@contextlib.contextmanager
def _replaced(
    path: str, root: str | None, binary: bool, encoding: str, newline: str | None
) -> Iterator[IO[Any]]:
    """A new file beside `path`, renamed over it once whole."""
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    tmp = f".{base}.{_host()}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    dir_fd = None
    created = False
    try:
        dir_fd = open_folder(folder, root)
        remove_stale(base, dir_fd)
        mode = _mode_of(base, dir_fd)
        fd = os.open(tmp, NEW_FILE_FLAGS, 0o666, dir_fd=dir_fd)
        created = True
        if mode is not None:
            os.fchmod(fd, mode)
        with _file(fd, binary, encoding, newline) as handle:
            yield handle
        os.replace(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        created = False
    except OSError as exc:
        raise file_error(exc, _named(exc, path), "write") from None
    finally:
        if dir_fd is not None:
            _close_folder(dir_fd, tmp if created else None)


def _named(exc: OSError, path: str) -> str:
    """What a write's error names: a folder on the way (absolute), else the file itself."""
    named = getattr(exc, "filename", None)
    return str(named) if named and os.path.isabs(str(named)) else path


def _close_folder(dir_fd: int, leftover: str | None) -> None:
    """Close the folder, removing a temporary file a failed write left in it."""
    if leftover is not None:
        with contextlib.suppress(OSError):
            os.unlink(leftover, dir_fd=dir_fd)
    os.close(dir_fd)


def _host() -> str:
    """This host's name as a temporary name holds it (no dots: they separate the name's parts)."""
    # socket.gethostname's, without importing socket (bench run's start-up time)
    return os.uname().nodename.split(".")[0].replace(os.sep, "_")


def remove_stale(base: str, dir_fd: int) -> list[str]:
    """Remove the temporary files a killed write of `base` left in the folder (see the module)."""
    removed = []
    host, now = _host(), time.time()
    for name in os.listdir(dir_fd):
        found = TEMP_NAME.match(name)
        if not found or found["base"] != base:
            continue
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            gone = found["host"] == host and not _alive(int(found["pid"]))
            if gone or now - st.st_mtime > STALE_AFTER_S:
                os.unlink(name, dir_fd=dir_fd)
                removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    """Whether a process `pid` runs on this host (one of another user counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mode_of(base: str, dir_fd: int) -> int | None:
    """The mode of the file being replaced (a regular one), so a rewrite keeps it; None for a new
    file."""
    try:
        st = os.stat(base, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", base)
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return None


def write_text(path: str, text: str, root: str | None = None, newline: str | None = None) -> str:
    """Write `text` to `path` whole (see `replacing`); returns the path."""
    with replacing(path, root, newline=newline) as handle:
        handle.write(text)
    return path


def write_bytes(path: str, data: bytes, root: str | None = None) -> str:
    with replacing(path, root, binary=True) as handle:
        handle.write(data)
    return path
