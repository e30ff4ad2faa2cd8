"""Read a JUBE YAML file into a `Node` tree, keeping YAML's line marks.

JUBE's mapping rules: a key naming a child element known for its parent becomes child elements
(one per list item), `_` is the element text, any other key is an attribute (`str()` of its value).
A file without a top-level `benchmark:` key is itself the benchmark. Only `safe_load` semantics
are used; `!include FILE[:["key"]...]` is resolved by caramel itself, never by `eval`.
"""

from __future__ import annotations

import ast
import os

import yaml

from caramel.errors import Location, SpecError
from caramel.spec.tree import Node

# Which keys open child elements, per parent element (everything else is an attribute).
CHILD_TAGS: dict[str, set[str]] = {
    "jube": {"benchmark", "parameterset", "fileset", "substituteset", "patternset", "selection",
             "include-path", "check_tags", "tags"},
    "benchmark": {"parameterset", "comment", "step", "fileset", "substituteset", "analyser", "analyzer",
                  "result", "patternset"},
    "analyse": {"file"},
    "analyser": {"use", "analyse"},
    "analyzer": {"use", "analyse"},
    "fileset": {"link", "copy", "prepare"},
    "include-path": {"path"},
    "parameterset": {"parameter", "zip", "exclude"},
    "patternset": {"pattern"},
    "result": {"use", "table", "syslog", "database"},
    "selection": {"not", "only", "tag"},
    "step": {"use", "do"},
    "substituteset": {"iofile", "sub"},
    "syslog": {"key"},
    "table": {"column"},
    "tags": {"check_tags", "tag"},
    "database": {"key"},
    "zip": {"param"},
}
# Keys that stay at the top when a file has no `benchmark:` key.
ROOT_ONLY = {"selection", "include-path", "check_tags", "tags"}


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves `!include` nodes for caramel to resolve."""


_Loader.add_constructor("!include", lambda loader, node: loader.construct_scalar(node))


def read_yaml(path: str, include_path: list[str] | None = None) -> Node:
    """Parse `path`; syntax errors name the file, line and the problem YAML reports."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", Location(path)) from None
    reader = _YamlReader(path, list(include_path or []) + [os.path.dirname(os.path.abspath(path))])
    return reader.read(text)


class _YamlReader:
    def __init__(self, path: str, include_path: list[str]) -> None:
        self.path = path
        self.include_path = include_path
        self.loader: _Loader | None = None

    def read(self, text: str) -> Node:
        loader = _Loader(text)
        self.loader = loader
        try:
            document = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else 0
            raise SpecError(f"not valid YAML: {exc.problem or exc.context}", Location(self.path, line)) from None
        finally:
            loader.dispose()
        root = Node("jube", where=Location(self.path, 1))
        if document is None:
            return root
        value = self._value(document)
        if isinstance(value, list):  # a list of benchmarks
            value = {"benchmark": (document, value)}
        if not isinstance(value, dict):
            raise SpecError("a benchmark file must be a mapping (name:, parameterset:, step:, ...)",
                            self._where(document), hint="see docs/file-format.md")
        if "benchmark" in value:
            for key, (_knode, items) in value.items():
                if key in CHILD_TAGS["jube"]:
                    for item, inode in items:
                        self._make(key, item, inode, root)
        else:
            bench_items: dict = {}
            for key, entry in value.items():
                if key in ROOT_ONLY:
                    for item, inode in entry[1]:
                        self._make(key, item, inode, root)
                else:
                    bench_items[key] = entry
            self._make("benchmark", bench_items, document, root)
        return root

    # --- YAML values as (python value, node) pairs --------------------------------------------
    def _where(self, node: yaml.Node) -> Location:
        return Location(self.path, node.start_mark.line + 1)

    def _value(self, node: yaml.Node):
        """Mapping → {key: (key node, [(item, item node)...])}; sequence → [(item, node)]; scalar → str."""
        if node.tag == "!include":
            return self._include(node)
        if isinstance(node, yaml.MappingNode):
            out: dict = {}
            for knode, vnode in node.value:
                key = str(self.loader.construct_object(knode, deep=True))  # type: ignore[union-attr]
                val = self._value(vnode)
                items = [(v, n) for v, n in val] if isinstance(val, list) else [(val, vnode)]
                if key == "<<":
                    continue
                out[key] = (knode, items)
            return out
        if isinstance(node, yaml.SequenceNode):
            out_list = []
            for item in node.value:
                val = self._value(item)
                if isinstance(val, list) and item.tag == "!include":
                    out_list.extend(val)
                else:
                    out_list.append((val, item))
            return out_list
        return self.loader.construct_object(node, deep=True)  # type: ignore[union-attr]

    def _include(self, node: yaml.Node):
        """`!include file.yaml:["key"][0]`: data from another file, subscripts applied."""
        spec = str(node.value)
        filename, _, subscript = spec.partition(":")
        found = next((os.path.join(p, filename.strip()) for p in self.include_path
                      if os.path.exists(os.path.join(p, filename.strip()))), None)
        if found is None:
            raise SpecError(f"!include: '{filename.strip()}' not found in the include path",
                            self._where(node), hint="add its folder with --include-path or <include-path>")
        sub = _YamlReader(found, self.include_path)
        loader = _Loader(open(found, encoding="utf-8").read())
        sub.loader = loader
        try:
            data = sub._value(loader.get_single_node())
        finally:
            loader.dispose()
        for key in _subscripts(subscript, self._where(node)):
            try:
                data = data[key][1] if isinstance(data, dict) else data[key][0]
            except (KeyError, IndexError, TypeError):
                raise SpecError(f"!include: {spec!r} has no entry {key!r}", self._where(node)) from None
            if isinstance(data, list) and len(data) == 1 and isinstance(data[0], tuple) and isinstance(key, str):
                data = data[0][0]
        return data

    # --- building nodes ---------------------------------------------------------------------
    def _make(self, tag: str, data, ynode: yaml.Node, parent: Node) -> None:
        if isinstance(data, list):  # e.g. an !include that gave several values
            for item, inode in data:
                self._make(tag, item, inode, parent)
            return
        node = Node(tag, where=self._where(ynode))
        parent.children.append(node)
        children = CHILD_TAGS.get(tag)
        if isinstance(data, dict):
            for key, (_knode, items) in data.items():
                for item, inode in items:
                    if children is not None and key in children:
                        self._make(key, item, inode, node)
                    elif key == "_" and children is None:
                        node.text = _text(item)
                    else:
                        node.attrs[key] = _text(item)
        else:
            node.text = _text(data)


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return str(value)
    return str(value)


def _subscripts(text: str, where: Location) -> list:
    """Parse `["a"][0]` into ["a", 0] with literal_eval only."""
    keys = []
    rest = text.strip()
    while rest:
        if not rest.startswith("["):
            raise SpecError(f"!include: cannot read subscript {text!r}", where, hint='write file.yaml:["key"]')
        end = rest.find("]")
        try:
            keys.append(ast.literal_eval(rest[1:end]))
        except (ValueError, SyntaxError):
            raise SpecError(f"!include: cannot read subscript {text!r}", where, hint='write file.yaml:["key"]') from None
        rest = rest[end + 1:].strip()
    return keys
