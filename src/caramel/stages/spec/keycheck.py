"""A read benchmark tree checked against the grammar (spec/grammar.py): unknown attributes (YAML:
keys).

JUBE ignores an attribute it does not know, so a file JUBE runs keeps running here: an unknown one
is a warning naming the file, the line and the closest allowed name (`timout` → `timeout`), and an
error under `--strict`. Unknown *elements* are errors where the builder meets them (spec/build.py),
as JUBE's XML reader refuses them too. `<meta>` and `<sanity>` are caramel's own and their readers
refuse an unknown key outright.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec.grammar import ELEMENTS, IGNORED_KEYS, TEXT_KEY, XML_ATTRIBUTE_PREFIXES
from caramel.stages.spec.tree import Node

CHECKED_BY_READER = frozenset({"meta", "sanity"})  # their readers refuse unknown keys themselves
_ALLOWED = {
    tag: frozenset(e.attr_names()) | {TEXT_KEY}
    for tag, e in ELEMENTS.items()
    if tag not in CHECKED_BY_READER
}


@dataclass(frozen=True)
class UnknownKey:
    """An attribute the grammar does not know, where it was written."""

    element: str
    name: str  # the element's name= (empty when it has none)
    key: str
    allowed: tuple[str, ...]
    where: Location
    ignored: str = ""  # a name real JUBE files write that JUBE ignores (grammar.IGNORED_KEYS): why

    @property
    def message(self) -> str:
        owner = f"{self.element} '{self.name}'" if self.name else self.element
        return f"unknown key '{self.key}' in {owner}"

    @property
    def hint(self) -> str:
        if self.ignored:
            return self.ignored
        close = did_you_mean(self.key, self.allowed)
        return close or f"{self.element} takes: " + ", ".join(self.allowed)


def unknown_keys(root: Node) -> Iterator[UnknownKey]:
    """Every attribute below `root` (itself included) its element does not allow, in file order."""
    allowed = _ALLOWED.get(root.tag)
    if allowed is None:  # an unknown element (the builder refuses it) or one its reader checks
        return
    for key in root.attrs:
        if key in allowed or key.startswith(XML_ATTRIBUTE_PREFIXES):
            continue
        line = root.attr_lines.get(key, root.where.line)
        yield UnknownKey(
            root.tag,
            root.attrs.get("name", "").strip(),
            key,
            ELEMENTS[root.tag].attr_names(),
            Location(root.where.file, line),
            IGNORED_KEYS.get(root.tag, {}).get(key, ""),
        )
    for child in root.children:
        yield from unknown_keys(child)


def check_keys(trees: list[Node], strict: bool) -> None:
    """Warn (on stderr) about each unknown key of `trees` once; under `strict`, refuse the first."""
    seen: set[tuple[str, str]] = set()
    for tree in trees:
        for unknown in unknown_keys(tree):
            if (str(unknown.where), unknown.key) in seen:
                continue
            seen.add((str(unknown.where), unknown.key))
            if strict and not unknown.ignored:  # a file JUBE runs as it stands is not refused
                raise SpecError(unknown.message, unknown.where, hint=unknown.hint)
            print(
                f"warning: {unknown.where}: {unknown.message}, "
                f"ignored as JUBE ignores it ({unknown.hint})",
                file=sys.stderr,
            )
