"""Reading back what bench wrote, bounded: every JSON text read from a run record, a history row, an
export line or an analysis cache is checked for size and nesting depth before it is parsed.

A run folder or a history may come from someone else (a shared project folder, an export mailed
by another site): what they hold is data of unknown size and shape. A text over `max_bytes` or
nested deeper than `max_depth` is an `OverLimit` naming where it was read, never a MemoryError or
a RecursionError (Python's JSON parser, and the decoders above it, recurse per level). The depth is
counted on the brackets outside strings, without parsing: a few C-speed passes, linear in the text
(escapes and every character but quotes and brackets dropped, then strings, then the innermost
pairs, one level a pass; `depth`).
`OverLimit` is a RunError for the user and a ValueError for the readers that already treat a
malformed value as damaged (the analysis cache: a miss).
"""

from __future__ import annotations

import json
import re
from typing import Any

from caramel.errors import RunError

MAX_BYTES = (
    64 * 1024 * 1024
)  # a stored model, a history row, an export line: far below, even for big runs
CACHE_BYTES = 512 * 1024 * 1024  # the finished tables of a run of 100,000 workpackages, with room
MAX_DEPTH = 64  # the benchmark model nests about 8 deep; an export line 3

_ESCAPE = re.compile(rb"\\.", re.S)
_STRING = re.compile(rb'"[^"]*"')
_KEEP = bytes(range(256)).translate(None, b'"[]{}')  # every byte but quotes and brackets: dropped
_SQUARE = bytes.maketrans(
    b"{}", b"[]"
)  # one kind of bracket: a pair is then one `[]` (mismatches: the parser's)


class OverLimit(RunError, ValueError):
    """A text too large or nested too deeply to be read back."""


def check(
    text: str | bytes, where: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> bytes:
    """`text` as UTF-8 bytes, once it is known to be at most `max_bytes` long and `max_depth`
    deep."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if len(data) > max_bytes:
        raise OverLimit(
            f"{where}: {size_text(len(data))} of JSON, over the {size_text(max_bytes)} "
            "bench reads back",
            hint="the file was not written by this caramel, or was changed by hand",
        )
    if data.count(b"[") + data.count(b"{") > max_depth and depth(data, max_depth) > max_depth:
        raise OverLimit(
            f"{where}: JSON nested more than {max_depth} deep, deeper than bench writes",
            hint="the file was not written by this caramel, or was changed by hand",
        )
    return data


def loads(
    text: str | bytes, where: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """`json.loads` of a bounded text; OverLimit when over a limit, ValueError when not JSON."""
    data = check(text, where, max_bytes, max_depth)
    try:
        return json.loads(data)
    except RecursionError:  # brackets that do not pair up, so the pre-count could not see the depth
        raise OverLimit(f"{where}: JSON nested too deeply") from None


def depth(data: bytes, stop: int) -> int:
    """How deep the brackets of `data` nest outside strings (counted up to `stop` + 1), in a few
    C-speed passes over the text, linear in its length (an export line of a thousand figures: half a
    millisecond). The escapes go first, then every byte but quotes and brackets. Then the strings:
    two quotes side by side are removed in one pass (`bytes.replace`); that never changes which
    brackets stand outside strings, even where the pair is the end of one string and the start of
    the next (the two merge into one string holding both contents), so the strings left (few: those
    holding brackets) are then removed by the regular expression on a text a tenth as long."""
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    skeleton = data.translate(None, _KEEP).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRING.sub(b"", skeleton)
    skeleton = skeleton.translate(_SQUARE)
    level = 0
    while skeleton and level <= stop:
        reduced = skeleton.replace(b"[]", b"")  # the innermost pairs: one level
        if len(reduced) == len(skeleton):
            break  # brackets that do not pair: not JSON, the parser says so
        skeleton, level = reduced, level + 1
    return level


def size_text(count: int) -> str:
    return f"{count / 1048576:.1f} MiB" if count >= 1048576 else f"{count} bytes"
