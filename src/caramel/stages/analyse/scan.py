"""Scanning one file with several patterns in a single pass and bounded memory.

JUBE reads the whole file and runs `re.findall(pattern, text)` (MULTILINE, plus DOTALL when asked)
for each pattern. caramel gives the same matches while reading the file once, in blocks of whole
lines (CHUNK characters):

- a file that fits in one block is searched exactly as JUBE does (one `findall` per pattern);
- a larger file is searched block by block; each pattern resumes where its last match ended, and
  matches starting in the last OVERLAP characters of a block are left for the next block, which
  starts with them. Lookbehinds, `^` and `\\b` see up to CONTEXT characters before the resume point.
  So every match (and lookaround) shorter than OVERLAP is found exactly as in the whole text; this
  covers `\\s+` across line ends and ordinary DOTALL patterns. The limit: a DOTALL match longer than
  OVERLAP (1 MiB), e.g. a greedy `(.*)` meant to run to the end of a 200 MB log, is cut at a block
  end instead of reaching the end of the file.

Each pattern has `bound` seconds on each file of up to BOUND_SCALE bytes, and as much again for
every further BOUND_SCALE (the setting `pattern_timeout`, 1 s by default: a sane pattern reads
far more than 64 MiB a second, so only a runaway one meets the bound): a pattern that
backtracks without end (`(a|aa)+$` on a long line) is stopped there, by the `regex` module's
`timeout=` (a drop-in for `re` that understands JUBE's patterns, and stops a running match, which
`re` cannot), and `scan_file` returns its name; its value is missing.

The file is read as text with universal newlines (`\\r\\n` and `\\r` become `\\n`, as in JUBE);
undecodable bytes become U+FFFD instead of aborting the analysis.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from caramel.stages.analyse.patterns import Probe

if TYPE_CHECKING:  # the patterns come compiled (analyse.patterns): a call that scans nothing
    import regex as re  # never imports the regex module

CHUNK = 8 * 1024 * 1024  # characters read per block
OVERLAP = 1024 * 1024  # a match starting this close to a block end waits for the next block
CONTEXT = 4096  # characters kept before resume points for lookbehinds and ^
BOUND_SCALE = 64 * 1024 * 1024  # bytes of a file each `bound` second covers


def matches(
    regex: re.Pattern[str], text: str, pos: int = 0, timeout: float | None = None
) -> list[str]:
    """`re.findall` flattened as JUBE flattens it: one entry per group of each match (TimeoutError
    after `timeout` seconds)."""
    found = regex.findall(text, pos, timeout=timeout)
    if regex.groups > 1:
        return [group for match in found for group in match]
    return found


def _texts(regex: re.Pattern[str], match: re.Match[str]) -> list[str]:
    if regex.groups == 0:
        return [match.group(0)]
    return list(match.groups(""))


Sink = Callable[[str, list[str]], None]


class Bound:
    """`seconds` of matching for each pattern on one file: what is left of each pattern's share."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.used: dict[str, float] = {}
        self.overrun: list[str] = []  # names of the patterns stopped, in order

    def left(self, name: str) -> float | None:
        if self.seconds is None:
            return None
        return max(self.seconds - self.used.get(name, 0.0), 1e-3)

    def spent(self, name: str, started: float) -> None:
        self.used[name] = self.used.get(name, 0.0) + time.perf_counter() - started


def scan_file(
    path: str,
    probes: list[Probe],
    sink: Sink,
    chunk: int = CHUNK,
    overlap: int = OVERLAP,
    bound: float | None = None,
) -> list[str]:
    """Call `sink(pattern name, match texts)` for the matches of each probe in the file at `path`,
    in file order (possibly several calls per pattern for a large file). Each probe may match for
    `bound` seconds per BOUND_SCALE bytes of the file, at least `bound` (None: no bound); the names
    of those stopped are returned, and what they found before is to be dropped by the caller."""
    with open(path, "rb") as raw:  # small files (nearly all logs): one read, no text layer
        size = os.fstat(raw.fileno()).st_size
        limits = Bound(None if bound is None else bound * max(1.0, size / BOUND_SCALE))
        data = (
            raw.read(size + 1) if size <= chunk else b""
        )  # (read(n) would allocate n bytes first)
    if size <= chunk and len(data) <= chunk:
        _scan_text(_decoded(data), probes, sink, limits)
        return limits.overrun
    with open(path, encoding="utf-8", errors="replace") as handle:
        _scan_blocks(handle, handle.read(chunk), probes, sink, chunk, overlap, limits)
    return limits.overrun


def _decoded(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if "\r" in text:  # universal newlines, as a text-mode read gives JUBE
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _scan_text(text: str, probes: list[Probe], sink: Sink, limits: Bound) -> None:
    """The whole file at once: JUBE's own search, each probe under its bound."""
    for probe in probes:
        try:
            found = matches(probe.regex, text, timeout=limits.left(probe.name))
        except TimeoutError:
            limits.overrun.append(probe.name)
            continue
        if found:
            sink(probe.name, found)


def _block_matches(
    probe: Probe, text: str, pos: int, boundary: int, limits: Bound
) -> tuple[list[str], int, bool]:
    """The match texts of `probe` in `text` from `pos` up to `boundary` (relative offsets), where it
    ended, and whether a match was left for the next block. TimeoutError past the probe's bound."""
    found: list[str] = []
    end = pos
    started = time.perf_counter()
    try:
        for match in probe.regex.finditer(text, pos, timeout=limits.left(probe.name)):
            if match.start() >= boundary:
                return found, end, True
            found += _texts(probe.regex, match)
            end = match.end()
    finally:
        limits.spent(probe.name, started)
    return found, end, False


def _scan_blocks(
    handle: TextIO,
    text: str,
    probes: list[Probe],
    sink: Sink,
    chunk: int,
    overlap: int,
    limits: Bound,
) -> None:
    base = 0  # file offset (in characters) of text[0]
    resume = [0] * len(probes)  # file offset where each probe continues
    while True:
        more = handle.read(chunk)
        text += more
        block = _Block(text, base, _boundary(text, base, overlap, eof=not more))
        resume = [
            _scan_block(probe, block, at, sink, limits)
            for probe, at in zip(probes, resume, strict=True)
        ]
        if not more:
            return
        keep_from = max(min(min(resume), block.boundary) - CONTEXT, base)
        text = text[keep_from - base :]
        base = keep_from


@dataclass(frozen=True)
class _Block:
    """The text held of a large file: from file offset `base`, final up to `boundary`."""

    text: str
    base: int
    boundary: int


def _boundary(text: str, base: int, overlap: int, eof: bool) -> int:
    """Where the matches of this block end (a file offset): everything at the end of the file, else
    before the last `overlap` characters (from a line start), left for the next block."""
    if eof:
        return base + len(text) + 1
    cut = len(text) - overlap
    line = text.rfind("\n", 0, cut)
    return base + (line + 1 if line > 0 else cut)


def _scan_block(probe: Probe, block: _Block, resume: int, sink: Sink, limits: Bound) -> int:
    """A probe's matches in the block from `resume` given to the sink; where it continues."""
    if probe.name in limits.overrun:
        return block.boundary  # stopped: it holds no text back
    try:
        found, end, pending = _block_matches(
            probe, block.text, resume - block.base, block.boundary - block.base, limits
        )
    except TimeoutError:
        limits.overrun.append(probe.name)
        return block.boundary
    _give(sink, probe.name, found)
    resume = max(resume, block.base + end)
    return resume if pending else max(resume, block.boundary)


def _give(sink: Sink, name: str, found: list[str]) -> None:
    """The non-empty match texts, if any, to the sink."""
    found = [text for text in found if text]
    if found:
        sink(name, found)
