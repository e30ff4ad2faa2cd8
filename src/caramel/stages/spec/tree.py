"""A source-located element tree: what both file formats are read into first.

XML elements and YAML mappings differ in syntax only; JUBE's YAML rules (a key that names a
known child element becomes a child, `_` is the text, any other key an attribute) map YAML onto
the same shape. Keeping the file and line of every node lets every later error point at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from caramel.errors import Location


@dataclass
class Node:
    """One element: tag, attributes, text and children, with where it was written."""

    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""
    children: list[Node] = field(default_factory=list)
    where: Location = field(default_factory=lambda: Location("<memory>"))
    attr_lines: dict[str, int] = field(
        default_factory=dict
    )  # YAML: the line of each attribute's key

    def find(self, tag: str) -> Node | None:
        return next((c for c in self.children if c.tag == tag), None)

    def findall(self, tag: str) -> list[Node]:
        return [c for c in self.children if c.tag == tag]

    def iter(self, tag: str | None = None) -> Iterator[Node]:
        """This node and all below it, depth first, optionally only one tag."""
        if tag is None or self.tag == tag:
            yield self
        for child in self.children:
            yield from child.iter(tag)

    def copy(self) -> Node:
        return Node(
            self.tag,
            dict(self.attrs),
            self.text,
            [c.copy() for c in self.children],
            self.where,
            dict(self.attr_lines),
        )
