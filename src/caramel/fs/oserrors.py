"""An OSError in words: the path it concerns and its real cause, never "?" and never the current
folder.

`FileError` is what every write of caramel raises (exit 2): `file_error(exc, path, "write")` names
the path (the one given, else the error's own, else "a file") and the cause in plain words, with a
hint that fits the cause.
"""

from __future__ import annotations

import errno
import os

from caramel.errors import CaramelError

# The cause of an errno, in words a user acts on.
CAUSES = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file is too large for its file system",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "it is a folder",
    errno.EBUSY: "the file or device is busy",
    errno.ETXTBSY: "the file is busy (a running program)",
    errno.EMFILE: "too many open files (this process's limit, ulimit -n)",
    errno.ENFILE: "too many open files on the system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ELOOP: "it is a symbolic link, and caramel does not write through links",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EIO: "an input/output error of the device",
    errno.EEXIST: "it exists already",
    errno.EXDEV: "it is on another file system",
    errno.ENOTEMPTY: "the folder is not empty",
}

HINTS = {
    errno.ENOSPC: "free space on the file system holding {folder} (df -h {folder}); "
    "the previous file is intact",
    errno.EDQUOT: "free space within your quota (quota -s); the previous file is intact",
    errno.ENOENT: "check that the folder {folder} exists",
    errno.EMFILE: "raise the limit (ulimit -n) or run fewer things at once",
    errno.ENFILE: "the system is out of file handles: try again later",
    errno.EBUSY: "wait until the process using it ends (fuser {path} shows which)",
    errno.ETXTBSY: "wait until the process using it ends (fuser {path} shows which)",
    errno.EACCES: "make it writable (chmod u+w {path} {folder}) or write elsewhere",
    errno.EPERM: "make it writable (chmod u+w {path} {folder}) or write elsewhere",
    errno.EROFS: "write to another file system",
    errno.ELOOP: "remove the link, or write the file elsewhere",
}


class FileError(CaramelError):
    """A file could not be read, written or removed: names the path and the cause."""

    def __init__(self, message: str, hint: str = "", errno_: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.errno = errno_


def cause(exc: BaseException) -> str:
    """The real cause of `exc` in words."""
    code = getattr(exc, "errno", None)
    if code in CAUSES:
        return CAUSES[code]
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text[0].lower() + text[1:] if text else "unknown cause"


def path_of(exc: BaseException, path: str | None = None) -> str:
    """The path an error concerns: the one the caller knows, else the error's own, else ''."""
    return str(path or getattr(exc, "filename", None) or "")


def file_error(exc: BaseException, path: str | None = None, action: str = "write") -> FileError:
    """The error to show for `exc` (an OSError) on `path` while doing `action` (write, read,
    remove...)."""
    target = path_of(exc, path)
    code = getattr(exc, "errno", None)
    named = target or "a file (the system did not say which)"
    message = f"cannot {action} {named}: {cause(exc)}"
    other = getattr(exc, "filename2", None)
    if other:
        message += f" (with {other})"
    hint = ""
    if code in HINTS and target:
        hint = HINTS[code].format(path=target, folder=os.path.dirname(os.path.abspath(target)))
    elif code in (errno.ENOSPC, errno.EDQUOT):
        hint = "free space (df -h shows which file system is full); files written before are intact"
    elif code in (errno.EMFILE, errno.ENFILE):
        hint = HINTS[code]
    return FileError(message, hint=hint, errno_=code)
