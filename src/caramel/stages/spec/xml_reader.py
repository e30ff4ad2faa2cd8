"""Read a JUBE XML file into a `Node` tree (lxml keeps the line of every element).

Entities as JUBE (Python's expat) treats them: internal ones (`<!ENTITY greeting "hello">`) are
expanded, an undefined one is an error naming file and line. Nothing is read from outside the
file: an external DTD (`<!DOCTYPE jube SYSTEM "...">`) or the declaration of an external entity
(`<!ENTITY x SYSTEM "...">`, a parameter entity too) is refused, naming file and line, where
expat would skip it silently (docs/security.md says they are refused). Text is never dropped
silently: text after a child element inside an element (mixed content, which JUBE ignores) is an
error.
"""

from __future__ import annotations

import re
import sys

from lxml import etree

from caramel.errors import Location, SpecError
from caramel.stages.spec.tree import Node


def read_xml(path: str) -> Node:
    """Parse `path`; a syntax error names the file, line and what the parser expected."""
    _check_entities(_parse(path, resolve=False), path)
    return _convert(_parse(path, resolve="internal").getroot(), path)


def _parse(path: str, resolve: bool | str) -> etree._ElementTree:
    parser = etree.XMLParser(
        remove_comments=True,
        remove_pis=True,
        resolve_entities=resolve,
        no_network=True,
        load_dtd=False,
    )
    try:
        return etree.parse(path, parser)
    except etree.XMLSyntaxError as exc:
        raise _syntax_error(exc, path) from None
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", Location(path)) from None


def _syntax_error(exc: etree.XMLSyntaxError, path: str) -> SpecError:
    """lxml's error as caramel words it: an undefined entity, an entity bomb, or not well-formed."""
    where = Location(path, exc.lineno or 0)
    # the line is in the location
    msg = re.sub(r", line \d+, column (\d+)$", r" (column \1)", exc.msg)
    undefined = re.match(r"Entity '([^']*)' not defined", msg)
    if undefined:
        return SpecError(
            f"undefined entity &{undefined.group(1)};",
            where,
            hint=f'declare it: <!DOCTYPE jube [<!ENTITY {undefined.group(1)} "...">]>, '
            "or write & as &amp;",
        )
    if "amplification" in msg:
        return SpecError(
            "the entities expand too much (an entity expansion bomb?)",
            where,
            hint="expand the entities by hand or use parameters",
        )
    return SpecError(f"not well-formed XML: {msg}", where)


def _declaration_line(path: str, pattern: str) -> int:
    """The line of the first match of `pattern` in the file's prologue (lxml keeps no line for a
    DOCTYPE or an entity declaration); 0 when not found."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 20).decode("utf-8", errors="replace")
    found = re.search(pattern, head)
    return head.count("\n", 0, found.start()) + 1 if found else 0


def _check_external(tree: etree._ElementTree, path: str) -> None:
    """Refuse an external DTD and the declaration of any external entity, with its line."""
    info = tree.docinfo
    if info.system_url or info.public_id:
        raise SpecError(
            f"external DTD {info.system_url or info.public_id!r} is refused "
            "(it would be read from outside the file)",
            Location(path, _declaration_line(path, r"<!DOCTYPE\b")),
            hint="remove SYSTEM/PUBLIC from the <!DOCTYPE>; declare entities inside "
            'it: <!DOCTYPE jube [<!ENTITY name "text">]>',
        )
    dtd = info.internalDTD
    if dtd is not None:
        _check_external_entities(dtd, path)


def _check_external_entities(dtd: etree.DTD, path: str) -> None:
    for entity in dtd.iterentities():
        if entity.content is None:
            line = _declaration_line(path, rf"<!ENTITY\s+(?:%\s+)?{re.escape(entity.name)}\s")
            raise SpecError(
                f"external entity {entity.name!r} is refused (it names {entity.system_url!r})",
                Location(path, line),
                hint="caramel reads only internal entities: "
                f'<!ENTITY {entity.name} "text">; or use <include> / init_with',
            )


def _check_entities(tree: etree._ElementTree, path: str) -> None:
    """Refuse an external DTD or entity, and references to entities the file does not declare."""
    _check_external(tree, path)
    dtd = tree.docinfo.internalDTD
    declared = {e.name: e for e in dtd.iterentities()} if dtd is not None else {}
    for node in tree.getroot().iter(etree.Entity):
        name = node.name
        entity = declared.get(name)
        if entity is None:
            raise SpecError(
                f"undefined entity &{name};",
                Location(path, node.sourceline or 0),
                hint=f'declare it: <!DOCTYPE jube [<!ENTITY {name} "...">]>, or write & as &amp;',
            )


def _convert(element: etree._Element, path: str) -> Node:
    node = _bare_node(element, path)
    for child in element:
        if isinstance(child.tag, str):  # not a comment or processing instruction
            _warn_of_tail(child, element, path)
            node.children.append(_convert(child, path))
    return node


def _bare_node(element: etree._Element, path: str) -> Node:
    """The element's tag, attributes, text and line, without its children."""
    return Node(
        tag=str(element.tag),
        attrs={str(k): str(v) for k, v in element.attrib.items()},
        text=element.text or "",
        where=Location(path, element.sourceline or 0),
    )


def _warn_of_tail(child: etree._Element, element: etree._Element, path: str) -> None:
    """Text after a child element: JUBE ignores it too; real files may carry it, so it stays a
    warning, never silent."""
    if child.tail and child.tail.strip():
        print(
            f"warning: {Location(path, child.sourceline or 0)}: "
            f"text {child.tail.strip()[:40]!r} after <{child.tag}> inside <{element.tag}> is "
            "ignored, as JUBE ignores it; move it into an element",
            file=sys.stderr,
        )
