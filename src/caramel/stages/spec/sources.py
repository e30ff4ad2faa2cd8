"""Finding and reading benchmark files: formats, the include path, tags, `<include>` elements.

The include path is searched in this order: `--include-path`, `JUBE_INCLUDE_PATH` (then
`CARAMEL_INCLUDE_PATH`), the file's own `<include-path>`, the file's folder, and last caramel's
shipped platform files (`templates/platform/`), so `init_with="platform.xml"` works without JUBE.
"""

from __future__ import annotations

import os
from pathlib import Path

from caramel.errors import Location, SpecError
from caramel.resources import shipped
from caramel.settings import current
from caramel.stages.spec.tags import TagSyntaxError, tag_matches
from caramel.stages.spec.tree import Node


def templates_dir() -> Path:
    """caramel's `templates/` folder (a checkout's, the wheel's, or the one named by
    CARAMEL_TEMPLATES)."""
    return shipped("templates")


def read_xml(path: str) -> Node:
    """An XML file's tree; lxml is imported only where a file is XML (it costs a YAML run 25 ms of
    CPU)."""
    from caramel.stages.spec.xml_reader import read_xml as read

    return read(path)


def read_yaml(path: str, include_path: list[str] | None = None) -> Node:
    """A YAML file's tree; PyYAML is imported only where a file is YAML."""
    from caramel.stages.spec.yaml_reader import read_yaml as read

    return read(path, include_path)


def read_tree(path: str, include_path: list[str] | None = None) -> Node:
    """Read an XML or YAML benchmark file into a Node tree (format by extension, then by
    content)."""
    if path.endswith(".xml"):
        return read_xml(path)
    if path.endswith((".yaml", ".yml")):
        return read_yaml(path, include_path)
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(200).lstrip()
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", Location(path)) from None
    return read_xml(path) if head.startswith("<") else read_yaml(path, include_path)


def env_include_path() -> list[str]:
    settings = current()
    return [*settings.jube_include_path, *settings.include_path]


class IncludePath:
    """The ordered folders searched for `init_with`, `use from=` and `<include from=>` files."""

    def __init__(self, folders: list[str]) -> None:
        self.folders = folders

    def find(self, filename: str, where: Location) -> str:
        if os.path.isabs(filename) and os.path.isfile(filename):
            return filename
        for folder in self.folders:
            candidate = os.path.join(folder, filename)
            if os.path.isfile(candidate):
                return candidate
        raise SpecError(
            f"'{filename}' not found in the include path",
            where,
            hint="searched: "
            + ", ".join(self.folders)
            + "; add a folder with --include-path, JUBE_INCLUDE_PATH or <include-path>",
        )


def check_tag(node: Node, tags: set[str]) -> bool:
    expr = node.attrs.get("tag")
    try:
        return tag_matches(expr, tags)
    except TagSyntaxError as exc:
        raise SpecError(
            f"cannot read tag expression {expr!r} on <{node.tag}>: {exc}",
            node.where,
            hint="tags combine with '!' (not), '+' (and), '|' (or) and parentheses",
        ) from None


def remove_inactive(node: Node, tags: set[str]) -> None:
    """Drop every element below `node` whose `tag` expression does not hold."""
    node.children = [c for c in node.children if check_tag(c, tags)]
    for child in node.children:
        remove_inactive(child, tags)


def find_path(root: Node, path: str) -> list[Node]:
    """The small XPath subset JUBE files use in `<include path=...>`: '.', 'a/b', './a', '//a'."""
    path = path.strip() or "."
    if path.startswith("//"):
        return _descendants(root, path[2:])
    nodes = [root]
    for part in _path_steps(path):
        nodes = _children_named(nodes, part)
    return nodes


def _descendants(root: Node, tag: str) -> list[Node]:
    """`//tag`: the elements below `root` named `tag`, depth first."""
    return [n for n in root.iter(tag) if n is not root]


def _path_steps(path: str) -> list[str]:
    """The element names of a path (`*`: any), without its `.` steps."""
    return [part for part in path.split("/") if part not in ("", ".")]


def _children_named(nodes: list[Node], part: str) -> list[Node]:
    return [c for n in nodes for c in n.children if part == "*" or c.tag == part]


def expand_includes(node: Node, include: IncludePath, tags: set[str], depth: int = 0) -> None:
    """Replace `<include from="file" path="xpath"/>` elements by the elements they name."""
    if depth > 20:
        raise SpecError("<include> nested more than 20 deep (a file including itself?)", node.where)
    node.children = [n for child in node.children for n in _included(child, include, tags)]
    for child in node.children:
        expand_includes(child, include, tags, depth + 1)


def _included(child: Node, include: IncludePath, tags: set[str]) -> list[Node]:
    """An active `<include>`: the elements it names (copies); any other element: itself."""
    if child.tag != "include" or not check_tag(child, tags):
        return [child]
    source = child.attrs.get("from", "")
    if not source:
        raise SpecError('<include> needs a from="FILE" attribute', child.where)
    tree = read_tree(include.find(source, child.where), include.folders)
    remove_inactive(tree, tags)
    return [n.copy() for n in find_path(tree, child.attrs.get("path", "."))]
