"""Writes that never follow a link and never leave a half-written file.

`replacing(path)` writes a new file beside the old one (a temporary name in the same folder, opened
with `O_EXCL | O_NOFOLLOW` through the folder's descriptor) and renames it over the old one when the
whole text is written: a reader sees the old file or the new one, a failed write (a full disk) leaves
the old one intact, and a link at `path` is replaced by the new file, never written through. With
`root` (a run folder), every folder between `root` and the file is opened with `O_NOFOLLOW` too, so a
link planted in a run folder someone else made (`result -> ~/`) cannot lead a write out of it.
Every OSError becomes a `FileError` naming the path and its cause (fs.oserrors).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import IO

from caramel.fs.oserrors import file_error
from caramel.fs.paths import PathError, is_within

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def open_folder(folder: str, root: str | None = None, create: bool = True) -> int:
    """A descriptor of `folder`; below `root` each component is opened without following a link
    (and made when missing, if `create`). Without `root` the folder is taken as the user named it."""
    folder = os.path.abspath(folder)
    if root is None:
        if create:
            os.makedirs(folder, exist_ok=True)
        return os.open(folder, DIR_FLAGS)
    root = os.path.abspath(root)
    if not is_within(root, folder):
        raise PathError(f"{folder} is outside {root}", hint="caramel writes a run's files inside its run folder")
    fd = os.open(root, DIR_FLAGS)
    current = root
    try:
        for part in os.path.relpath(folder, root).split(os.sep):
            if part in ("", "."):
                continue
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            current = os.path.join(current, part)
            try:
                child = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOTDIR and os.path.islink(current):
                    raise OSError(errno.ELOOP, "a symbolic link", current) from None
                exc.filename = current
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def replacing(path: str, root: str | None = None, binary: bool = False, encoding: str = "utf-8",
              newline: str | None = None) -> Iterator[IO]:
    """`with replacing(path) as handle:` writes `path` whole or not at all (see the module)."""
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    tmp = f".{base}.{os.urandom(4).hex()}.tmp"
    dir_fd = None
    created = False
    try:
        dir_fd = open_folder(folder, root)
        mode = _mode_of(base, dir_fd)
        fd = os.open(tmp, NEW_FILE_FLAGS, 0o666, dir_fd=dir_fd)
        created = True
        if mode is not None:
            os.fchmod(fd, mode)
        handle = os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else encoding,
                           newline=None if binary else newline)
        with handle:
            yield handle
        os.replace(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        created = False
    except OSError as exc:
        named = getattr(exc, "filename", None)  # a folder on the way (absolute), else the file itself
        raise file_error(exc, str(named) if named and os.path.isabs(str(named)) else path, "write") from None
    finally:
        if dir_fd is not None:
            if created:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
            os.close(dir_fd)


def _mode_of(base: str, dir_fd: int) -> int | None:
    """The mode of the file being replaced (a regular one), so a rewrite keeps it; None for a new file."""
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
