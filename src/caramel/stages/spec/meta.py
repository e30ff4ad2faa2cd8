"""A benchmark's `meta` block (caramel addition): description, tags, owner, limits, supported
systems.

YAML writes it as a `meta:` mapping at the benchmark level (JUBE 2.7.1 keeps an unknown key as an
attribute it never reads). JUBE's XML reader refuses unknown elements in `<benchmark>`, but it reads
only the text of `<comment>`, so in XML the block is a `<meta>` element inside `<comment>`:

    <comment>GPT
    training<meta><tags>llm,gpt</tags><time_limit>01:00:00</time_limit></meta></comment>

Each key is a child element (or an attribute) of `<meta>`; list keys take several values, written
as a YAML list or comma-separated. The block is read without tags, so a catalog can list a file
without knowing which tags a run needs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec.model import BenchmarkMeta
from caramel.stages.spec.regexes import with_builtins
from caramel.stages.spec.tree import Node

TEXT_KEYS = ("description", "owner", "precision", "url", "multiple_results")
LIST_KEYS = ("tags", "systems")
# what a running workpackage shows of its log (engine.logprogress, docs/file-format.md "progress")
PROGRESS_KEYS = ("progress", "progress_file", "progress_rate", "progress_unit")
KEYS = TEXT_KEYS + LIST_KEYS + PROGRESS_KEYS + ("devices", "time_limit", "weight")
_CLOCK = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]?\d)(?::([0-5]?\d(?:\.\d+)?))?$")


def parse_duration(text: str) -> float:
    """Seconds from `3600`, `90.5`, `MM:SS`, `HH:MM:SS` or SLURM's `D-HH:MM:SS`; 0 means no limit.

    Raises ValueError with what was expected."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = _clock_seconds(text)
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError(f"{text!r} is not a duration; expected a number of seconds of at least 0")
    return seconds


def _clock_seconds(text: str) -> float:
    """Seconds from `MM:SS`, `HH:MM:SS` or `D-HH:MM:SS`."""
    match = _CLOCK.match(text)
    if not match:
        raise ValueError(
            f"{text!r} is not a duration; expected seconds, MM:SS or HH:MM:SS"
        ) from None
    days, first, second, third = match.groups()
    if third is None:  # MM:SS
        seconds = int(first) * 60 + float(second)
    else:
        seconds = int(first) * 3600 + int(second) * 60 + float(third)
    return seconds + int(days or 0) * 86400


def find_meta_node(benchmark: Node) -> Node | None:
    """The `<meta>` of a benchmark node: its own child (YAML) or the one inside `<comment>`
    (XML)."""
    found = benchmark.findall("meta")
    comment = benchmark.find("comment")
    if comment is not None:
        found += comment.findall("meta")
    if len(found) > 1:
        raise SpecError(
            "the benchmark has more than one meta block",
            found[1].where,
            hint=f"the first is at {found[0].where}; merge them",
        )
    return found[0] if found else None


def read_meta(node: Node | None) -> BenchmarkMeta:
    """The typed block; a wrong key, type or duration names the file and line."""
    if node is None:
        return BenchmarkMeta()
    # each key's value is of its field's type (_value and LIST_KEYS make it so)
    fields: dict[str, Any] = {"where": node.where}
    for key, items in _written(node).items():
        fields[key] = _field(key, items)
    return BenchmarkMeta(**fields)


def _written(node: Node) -> dict[str, list[tuple[str, Location]]]:
    """Each key's texts as written (XML: attributes and child elements), with their lines."""
    values: dict[str, list[tuple[str, Location]]] = {}
    for key, text in node.attrs.items():
        values.setdefault(key, []).append((text, node.where))
    for child in node.children:
        if child.children:
            raise SpecError(
                f"meta: '{child.tag}' holds elements, expected a text",
                child.where,
                hint="write each meta key as a single value (tags and systems: a list)",
            )
        values.setdefault(child.tag, []).append((child.text, child.where))
    return values


def _field(key: str, items: list[tuple[str, Location]]) -> Any:
    """One key's value: a list key's words, else its one value read."""
    where = items[0][1]
    if key not in KEYS:
        raise SpecError(
            f"unknown key '{key}' in meta",
            where,
            hint=did_you_mean(key, KEYS) or "meta keys: " + ", ".join(KEYS),
        )
    if key in LIST_KEYS:
        return _words(items)
    if len(items) > 1:
        raise SpecError(
            f"meta: '{key}' is given {len(items)} times, expected one value", items[1][1]
        )
    return _value(key, items[0][0].strip(), where)


def _words(items: list[tuple[str, Location]]) -> tuple[str, ...]:
    """A list key's comma-separated words, over all its texts."""
    return tuple(v.strip() for text, _ in items for v in text.split(",") if v.strip())


def _devices(text: str, where: Location) -> int:
    if not text.isdigit() or int(text) < 1:
        raise SpecError(
            f"meta: devices={text!r} is not a number of devices",
            where,
            hint="expected a whole number of at least 1, e.g. devices: 4",
        )
    return int(text)


def _time_limit(text: str, where: Location) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise SpecError(
            f"meta: time_limit: {exc}",
            where,
            hint='e.g. time_limit: "01:30:00" or time_limit: 5400 (0: no limit)',
        ) from None


def _progress_pattern(key: str, text: str, where: Location) -> str:
    """A progress pattern as written, once it compiles with the groups it needs: `progress` the
    iteration (and the iteration count), `progress_rate` the rate."""
    try:
        groups = re.compile(with_builtins(text)).groups
    except re.error as exc:
        raise SpecError(
            f"meta: {key}: {text!r} is no regular expression ({exc})",
            where,
            hint="write a pattern as for a patternset, e.g. iteration $jube_pat_int/$jube_pat_int",
        ) from None
    if not groups:
        wanted = "the iteration, then the iteration count" if key == "progress" else "the rate"
        raise SpecError(
            f"meta: {key}: {text!r} captures nothing; expected a group for {wanted}",
            where,
            hint="$jube_pat_int and $jube_pat_fp capture a number, $jube_pat_nint does not",
        )
    return text


def _weight(text: str, where: Location) -> float:
    try:
        weight = float(text)
    except ValueError:
        weight = -1.0
    if not 0 <= weight < float("inf"):
        raise SpecError(
            f"meta: weight={text!r} is not a weight",
            where,
            hint="expected a number of at least 0, e.g. weight: 2 (its share of the suite's score)",
        )
    return weight


def _multiple_results(text: str, where: Location) -> str | None:
    return text or None


# how a meta key that is not a plain text is read from its text (`where`: the line, for errors)
_READERS: dict[str, Callable[[str, Location], int | float | str | None]] = {
    "devices": _devices,
    "time_limit": _time_limit,
    "multiple_results": _multiple_results,
    "weight": _weight,
    "progress": functools.partial(_progress_pattern, "progress"),
    "progress_rate": functools.partial(_progress_pattern, "progress_rate"),
}


def _value(key: str, text: str, where: Location) -> int | float | str | None:
    reader = _READERS.get(key)
    return reader(text, where) if reader else text
