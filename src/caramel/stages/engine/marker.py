"""The engine's channel: the markers a workpackage's script sends bench, parsed strictly.

A script writes its markers on a descriptor of its own (CHANNEL_FD, which no `do` inherits: each do
runs with it closed), one per line, each carrying the secret of the bench that started it:

    @caramel <secret> <KIND> [<number> ...]

A do cannot write there by accident (its stdout is its own file), and what it could write on purpose
(to `/proc/<pid>/fd/9`) does not carry the secret. `parse_marker` is a pure function: a line is
a `Marker` or a `ChannelError` (a caramel error: bench says it, naming the workpackage), never
anything else. The environment a script exports travels in a file, not on the channel, so no value
(however many lines it holds) is ever read as a marker.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from caramel.errors import RunError

PREFIX = "@caramel"
CHANNEL_FD = 9  # the descriptor a script writes its markers to (one digit: dash takes no more)
MAX_LINE = 256  # a marker is short; anything longer is not one
MAX_NUMBER = 10  # digits of a number (a pid, an index, an exit status)


class MarkerKind(str, enum.Enum):
    """What a marker says, and how many numbers follow it."""

    PID = "P"  # the script's process id (its process group, where it has one of its own)
    BEGIN = "B"  # do <index> starts
    ENDED = "E"  # do <index> ended with <status>
    WAITING = "W"  # do <index>'s done file is missing
    BREAK = "K"  # do <index>'s break file was found
    ERROR_FILE = "X"  # do <index>'s error file was found
    ENV = "ENV"  # the environment was written to the script's environment file
    END = "END"  # every do ran
    EXIT = "EXIT"  # the script ended with <status>

    @property
    def arity(self) -> int:
        return {"P": 1, "B": 1, "E": 2, "W": 1, "K": 1, "X": 1, "EXIT": 1}.get(self.value, 0)


@dataclass(frozen=True)
class Marker:
    kind: MarkerKind
    numbers: tuple[int, ...] = ()


class ChannelError(RunError):
    """Something on the engine's channel that is not a marker of this bench."""


def parse_marker(line: str, secret: str) -> Marker:
    """The marker `line` (without its newline) holds, or ChannelError. Strict: single spaces, the
    secret exactly, a known kind, exactly its count of unsigned decimal numbers."""
    if not secret:
        raise ValueError("a channel needs a secret")
    words = _marker_words(line, secret)
    kind = _kind(words[2])
    numbers = words[3:]
    if len(numbers) != kind.arity:
        raise ChannelError(f"marker {kind.value} takes {kind.arity} number(s), not {len(numbers)}")
    return Marker(kind, tuple(_number(kind, text) for text in numbers))


def _marker_words(line: str, secret: str) -> list[str]:
    """The words of a line that is short, starts with PREFIX and carries this bench's secret."""
    if len(line) > MAX_LINE:
        raise ChannelError(
            f"a line of {len(line)} characters on the engine's channel: not a marker"
        )
    words = line.split(" ")
    if len(words) < 3 or words[0] != PREFIX:
        raise ChannelError(f"not a marker on the engine's channel: {line[:80]!r}")
    if words[1] != secret:
        raise ChannelError(
            "a marker without this bench's secret on the engine's channel (written by a do?)"
        )
    return words


def _kind(word: str) -> MarkerKind:
    try:
        return MarkerKind(word)
    except ValueError:
        raise ChannelError(f"an unknown marker on the engine's channel: {word[:20]!r}") from None


def _number(kind: MarkerKind, text: str) -> int:
    """One of a marker's numbers: 1 to MAX_NUMBER ASCII digits (str.isdigit alone takes other
    scripts' digits, '²', '٣')."""
    if not (0 < len(text) <= MAX_NUMBER and text.isascii() and text.isdigit()):
        raise ChannelError(f"marker {kind.value}: {text[:20]!r} is not a number")
    return int(text)


def marker_line(secret: str, kind: MarkerKind, *numbers: int) -> str:
    """The line `parse_marker` reads as this marker (for tests and the shell function's format)."""
    return " ".join([PREFIX, secret, kind.value, *(str(n) for n in numbers)])
