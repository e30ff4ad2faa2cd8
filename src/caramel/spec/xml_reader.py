"""Read a JUBE XML file into a `Node` tree (lxml keeps the line of every element)."""

from __future__ import annotations

import re

from lxml import etree

from caramel.errors import Location, SpecError
from caramel.spec.tree import Node


def read_xml(path: str) -> Node:
    """Parse `path`; a syntax error names the file, line and what the parser expected."""
    parser = etree.XMLParser(remove_comments=True, remove_pis=True, resolve_entities=False)
    try:
        root = etree.parse(path, parser).getroot()
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        msg = re.sub(r", line \d+, column (\d+)$", r" (column \1)", exc.msg)  # the line is in the location
        raise SpecError(f"not well-formed XML: {msg}", Location(path, line)) from None
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", Location(path)) from None
    return _convert(root, path)


def _convert(element: etree._Element, path: str) -> Node:
    node = Node(
        tag=str(element.tag),
        attrs={str(k): str(v) for k, v in element.attrib.items()},
        text=element.text or "",
        where=Location(path, element.sourceline or 0),
    )
    for child in element:
        if not isinstance(child.tag, str):  # comments and processing instructions
            continue
        node.children.append(_convert(child, path))
    return node
