"""One checked way from text to a path: the path stays inside its root, or it is refused naming the
text's source.

Every path caramel makes from text someone wrote (a step's `shared=` name, a workpackage folder name
read from a run record, a tag that names a system file, a `<database file=>` of a stored model, a
parameter that becomes a file name) goes through `inside` (a path below a root) or `name` (one
component of a path: no separator, no `..`). The check is on the text, made absolute and normalised
without touching the file system; writes then refuse links on their own (`fs.writes`), so a link
planted inside the root cannot lead a write out of it either.
"""

from __future__ import annotations

import os

from caramel.errors import CaramelError, Location

BAD_PARTS = ("/", "\\", "\0")


class PathError(CaramelError):
    """A path made from text would leave the folder it belongs in."""


def _source(source: Location | str | None) -> tuple[Location | None, str]:
    """(location, words) for where the text came from."""
    if isinstance(source, Location):
        return source, ""
    return None, f" (from {source})" if source else ""


def name(text: str, what: str, folder: str, source: Location | str | None = None) -> str:
    """`text` as one file or folder name inside `folder` (words for the message): no separator, not
    `.`/`..`."""
    bad = next((part for part in BAD_PARTS if part in text), None)
    if bad is None and text not in ("", ".", ".."):
        return text
    where, said = _source(source)
    shown = (
        "the NUL character"
        if bad == "\0"
        else repr(bad)
        if bad
        else "no name"
        if not text
        else repr(text)
    )
    raise PathError(
        f"{what} {text!r}{said} would be a file outside {folder}: it holds {shown}",
        where,
        hint="a name that becomes a file name holds no /, \\ or .. (and is not empty)",
    )


def inside(
    root: str, text: str, what: str, source: Location | str | None = None, absolute_ok: bool = False
) -> str:
    """The absolute, normalised path `text` names below `root` (relative texts are taken from
    `root`).

    Refused (PathError naming `what` and its source) when it leaves `root` by `..`, is absolute and
    `absolute_ok` is false, is empty or holds a NUL. `absolute_ok`: an absolute text is allowed if
    it is below `root` all the same."""
    where, said = _source(source)
    if not text or "\0" in text:
        raise PathError(f"{what} {text!r}{said} is not a path", where, hint="give a file name")
    if os.path.isabs(text) and not absolute_ok:
        raise PathError(
            f"{what} {text!r}{said} is an absolute path; it must be inside {root}",
            where,
            hint=f"give a path relative to {root}",
        )
    base = os.path.abspath(root)
    path = os.path.normpath(os.path.join(base, text))
    if not is_within(base, path):
        raise PathError(
            f"{what} {text!r}{said} would be outside {root} ({path})",
            where,
            hint=f"give a path inside {root} (no .. that leaves it, no absolute path elsewhere)",
        )
    return path


def is_within(root: str, path: str) -> bool:
    """Whether normalised absolute `path` is `root` or below it (text only, links not resolved)."""
    root = os.path.normpath(os.path.abspath(root))
    path = os.path.normpath(os.path.abspath(path))
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def same_file(a: str, b: str) -> bool:
    """Whether two paths are one file: the same inode when both exist, else the same real path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def may_write(path: str) -> bool:
    """Whether this process may write the file `path`: make or replace it, and the files beside it
    (a journal). False for another user's run folder and on a read-only mount (EROFS): a reader's
    own outputs there are skipped, never an error. The file, when there, and the nearest folder
    above it that exists are checked (os.access: the user's own permissions)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    if os.path.lexists(path) and not os.access(path, os.W_OK):
        return False
    return os.access(folder, os.W_OK | os.X_OK)
