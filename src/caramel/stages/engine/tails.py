"""The last lines a failed do wrote, for its workpackage's reason (issue 21).

A do's own stdout and stderr files are read, and the files its text redirects to (`cmd > job.out
2>&1`, as every shipped benchmark writes): without them a failed do that sends everything to
`job.out` is reported with no reason at all. The redirects are found by a plain reading of the
text (`>`, `>>`, `1>`, `2>`, `&>`, `&>>`, `>|` followed by a word), not by running a shell: a target
holding a `$`, a backquote or a glob, a descriptor (`>&2`, `2>&1`) or `/dev/...` is skipped. A
target is read only when it lies inside the do's work folder once links are resolved: a link out
of the work folder, or a path with `..` that leaves it, is never read.

Each tail is bounded: the last TAIL_LINES lines of the last TAIL_BYTES bytes, joined with " | " so
the reason stays one line per file.
"""

from __future__ import annotations

import os
import re

TAIL_LINES = 5
TAIL_BYTES = 2048
MAX_TARGETS = 4  # redirect targets read at most (a do writing many files names the first ones)

# A redirect operator (optionally with descriptor 1 or 2, or &) and the word after it.
_REDIRECT = re.compile(r"(?:^|(?<=[\s;|&()]))(?:[12]?>>?\|?|&>>?)[ \t]*([^\s;|&<>()]+)")
_UNSAFE = re.compile(r"[$`*?\[\]{}~\\\"']")


def redirect_targets(text: str) -> list[str]:
    """The plain file names `text` redirects output to, in order, each once."""
    out: list[str] = []
    for match in _REDIRECT.finditer(text):
        target = match.group(1)
        if target.startswith("&") or _UNSAFE.search(target) or target.startswith("/dev/"):
            continue
        if target not in out:
            out.append(target)
    return out[:MAX_TARGETS]


def inside(path: str, folder: str) -> str | None:
    """`path` (relative to `folder`) resolved, when it is a regular file inside `folder`; else
    None."""
    real_folder = os.path.realpath(folder)
    real = os.path.realpath(os.path.join(folder, path))
    if os.path.commonpath([real, real_folder]) != real_folder or not os.path.isfile(real):
        return None
    return real


def tail(path: str, lines: int = TAIL_LINES, limit: int = TAIL_BYTES) -> str:
    """The last `lines` non-empty lines of the last `limit` bytes of `path`, joined by " | "."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            text = handle.read(limit).decode(errors="replace")
    except OSError:
        return ""
    if size > limit and "\n" in text:
        text = text.split("\n", 1)[1]  # the first line read is cut: dropped
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def output_tails(text: str, cwd: str, stdout: str, stderr: str) -> list[tuple[str, str]]:
    """(label, tail) of each file a do wrote that holds something: its stderr, its stdout, then the
    files its text redirects to (labelled by the name the text gives them)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for label, path in (("stderr", stderr), ("stdout", stdout)):
        if path and os.path.isfile(path):
            seen.add(os.path.realpath(path))
            found = tail(path)
            if found:
                out.append((label, found))
    for target in redirect_targets(text):
        real = inside(target, cwd)
        if real is None or real in seen:
            continue
        seen.add(real)
        found = tail(real)
        if found:
            out.append((target, found))
    return out
