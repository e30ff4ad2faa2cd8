"""Read a JUBE YAML file into a `Node` tree, keeping YAML's line marks.

JUBE's mapping rules: a key naming a child element known for its parent becomes child elements
(one per list item), `_` is the element text, any other key is an attribute (`str()` of its value).
A file without a top-level `benchmark:` key is itself the benchmark. Only `safe_load` semantics
are used; `!include FILE[:["key"]...]` is resolved by caramel itself, never by `eval`.

Aliases (`*name`) share the value of their anchor, they are not copied, and a document whose
aliases would expand it beyond `MAX_EXPANDED_NODES` values is refused before it is built (nine
levels of nine aliases each would otherwise be 387 million values).
"""

from __future__ import annotations

import ast
import os
from typing import Any

import yaml

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec.grammar import ELEMENTS, YAML_MAPPINGS, YAML_ROOT_ONLY, children_of
from caramel.stages.spec.tree import Node

# Which keys open child elements, per parent element (everything else is an attribute): the
# grammar's
CHILD_TAGS: dict[str, set[str]] = {
    tag: children_of(tag, "yaml") for tag in ELEMENTS if children_of(tag, "yaml")
}
# How many YAML values (scalars, lists, mappings) a file may hold once its aliases are expanded.
MAX_EXPANDED_NODES = 100_000

# What `_YamlReader._value` makes of a YAML node (a mapping of (key node, items), a list of (value,
# node) pairs, or a scalar): its shape is the file's, known only at run time.
YamlData = Any
# Keys that stay at the top when a file has no `benchmark:` key; elements written as mappings (the
# grammar's)
ROOT_ONLY = YAML_ROOT_ONLY
MAPPING_TAGS = YAML_MAPPINGS
# Elements whose value is a text (a command, a file name): the attributes each may have in a
# mapping. A mapping with no text (`_`) and another key is what YAML makes of an unquoted ': ' in
# the text.
TEXT_TAGS: dict[str, set[str]] = {
    tag: set(ELEMENTS[tag].attr_names())
    for tag in ("do", "prepare", "copy", "link", "column", "call")
}


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type information
    """SafeLoader that leaves `!include` nodes for caramel to resolve."""


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same with libyaml's parser where PyYAML has it (the pure-Python parser costs `bench run`
    0.2 s of CPU on a 200-line file): the same safe constructors and resolver. A file it refuses is
    parsed again by `_Loader`, so a syntax error reads the same with or without libyaml."""


for _cls in (_Loader, _FastLoader):
    _cls.add_constructor("!include", lambda loader, node: loader.construct_scalar(node))


def read_yaml(path: str, include_path: list[str] | None = None) -> Node:
    """Parse `path`; syntax errors name the file, line and the problem YAML reports."""
    text = _read_text(path, Location(path))
    reader = _YamlReader(path, list(include_path or []) + [os.path.dirname(os.path.abspath(path))])
    try:
        return reader.read(text)
    except RecursionError:
        raise SpecError(
            "the file nests lists or mappings too deeply to be read",
            Location(path),
            hint="a benchmark file needs a few levels of nesting, not hundreds",
        ) from None


def read_text(path: str) -> str:
    """A YAML file's text (of a benchmark or a system): not readable or not UTF-8 is a SpecError
    naming it."""
    return _read_text(path, Location(path))


def _read_text(path: str, where: Location) -> str:
    """The file's text; unreadable or non-UTF-8 files are errors naming the file (and line)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", where) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be decoded",
            Location(path, line),
            hint="save the file as UTF-8",
        ) from None


def _new_loader(text: str, path: str) -> _Loader:
    """A loader of `text`; a character YAML does not allow (a control character) is a SpecError at
    its line."""
    try:
        return _Loader(text)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise SpecError(
            f"not valid YAML: the character {exc.character!r} is not allowed in a YAML file",
            Location(path, line),
            hint="remove the control character (YAML allows tab, newline and printable text)",
        ) from None


class _YamlReader:
    def __init__(self, path: str, include_path: list[str], chain: tuple[str, ...] = ()) -> None:
        self.path = path
        self.include_path = include_path
        self.loader: yaml.SafeLoader | None = None
        self.chain = chain + (
            os.path.abspath(path),
        )  # files being read, to refuse an !include loop
        self._values: dict[
            int, object
        ] = {}  # YAML node id -> its value: an alias is read once, then shared

    def read(self, text: str) -> Node:
        self.loader, document = _compose(text, self.path)
        _check_expanded_size(document, self.path)
        root = Node("jube", where=Location(self.path, 1))
        if document is None:
            return root
        value = self._value(document)
        if isinstance(value, list):  # a list of benchmarks
            value = {"benchmark": (document, value)}
        if not isinstance(value, dict):
            raise SpecError(
                f"the file holds the single value {_text(value)!r}, not a mapping",
                self._where(document),
                hint="a benchmark file is a mapping: name:, outpath:, parameterset:, step: ...",
            )
        if "benchmark" in value:
            for key, (knode, items) in value.items():
                self._make_top_level(key, knode, items, root)
        else:
            self._make_bare_benchmark(value, document, root)
        return root

    def _make_top_level(self, key: str, knode: yaml.Node, items: YamlData, root: Node) -> None:
        """One top-level key of a file with `benchmark:` keys: child elements, or an attribute of
        the root (which the grammar check reports)."""
        children = CHILD_TAGS["jube"]
        if key in children:
            self._make(key, items, knode, root)
            return
        if any(isinstance(item, (dict, list)) for item, _ in items):
            self._refuse_misspelt_child(key, knode, children, "at the top level")
        root.attrs[key] = _text(items[0][0]) if items else ""
        root.attr_lines[key] = knode.start_mark.line + 1

    def _make_bare_benchmark(self, value: YamlData, document: yaml.Node, root: Node) -> None:
        """A file without `benchmark:` is itself the benchmark: its root-only keys stay at the top,
        all others make the benchmark."""
        bench_items: dict[str, YamlData] = {}
        for key, entry in value.items():
            if key in ROOT_ONLY:
                self._make(key, entry[1], entry[0], root)
            else:
                bench_items[key] = entry
        self._make("benchmark", bench_items, document, root)

    @staticmethod
    def _parse(loader: yaml.SafeLoader, path: str) -> yaml.Node | None:
        """The document's node tree; a YAML syntax error names the file, line and problem."""
        try:
            return loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else 0
            raise SpecError(
                f"not valid YAML: {exc.problem or exc.context}",
                Location(path, line),
                hint=_context_hint(exc, line),
            ) from None
        finally:
            loader.dispose()

    # --- YAML values as (python value, node) pairs --------------------------------------------
    def _where(self, node: yaml.Node) -> Location:
        return Location(self.path, node.start_mark.line + 1)

    def _construct(self, node: yaml.Node) -> YamlData:
        """A scalar's Python value; a value its YAML tag cannot make (`!!int abc`) is an error."""
        try:
            return self.loader.construct_object(node, deep=True)  # type: ignore[union-attr]
        except yaml.constructor.ConstructorError as exc:
            raise SpecError(
                f"cannot read this YAML value: {exc.problem}",
                self._where(node),
                hint="caramel reads plain YAML (safe_load) plus !include",
            ) from None
        except (ValueError, TypeError, AttributeError):
            raise SpecError(
                f"cannot read {node.value!r} as {node.tag}",
                self._where(node),
                hint="remove the tag or fix the value",
            ) from None

    def _value(self, node: yaml.Node) -> YamlData:
        """Mapping → {key: (key node, [(item, item node)...])}; sequence → [(item, node)]; scalar →
        str.

        The value of a node reached again through an alias is the same object (never changed
        later)."""
        key = id(node)
        if key not in self._values:
            self._values[key] = self._read_value(node)
        return self._values[key]

    def _read_value(self, node: yaml.Node) -> YamlData:
        if node.tag == "!include":
            return self._include(node)
        if not isinstance(node, yaml.ScalarNode) and node.tag not in _Loader.yaml_constructors:
            raise SpecError(
                f"cannot read this YAML value: the tag {node.tag!r} is not supported",
                self._where(node),
                hint="caramel reads plain YAML (safe_load) plus !include",
            )
        if isinstance(node, yaml.MappingNode):
            return self._mapping_value(node)
        if isinstance(node, yaml.SequenceNode):
            return self._sequence_value(node)
        return self._construct(node)

    def _mapping_value(self, node: yaml.MappingNode) -> YamlData:
        """{key: (key node, [(item, item node)...])}, merge keys (`<<: *anchor`) applied."""
        try:
            self.loader.flatten_mapping(node)  # type: ignore[union-attr]
        except yaml.constructor.ConstructorError as exc:
            raise SpecError(
                f"cannot merge with '<<': {exc.problem}",
                self._where(node),
                hint="'<<' takes an alias of a mapping (<<: *name) or a list of them",
            ) from None
        out: dict[str, YamlData] = {}
        for knode, vnode in node.value:
            key = str(self._construct(knode))
            val = self._value(vnode)
            items = [(v, n) for v, n in val] if isinstance(val, list) else [(val, vnode)]
            if key != "<<":
                out[key] = (knode, items)
        return out

    def _sequence_value(self, node: yaml.SequenceNode) -> YamlData:
        """[(item, item node)...]; an `!include` that gave a list adds its items in place."""
        out_list = []
        for item in node.value:
            val = self._value(item)
            if isinstance(val, list) and item.tag == "!include":
                out_list.extend(val)
            else:
                out_list.append((val, item))
        return out_list

    def _include(self, node: yaml.Node) -> YamlData:
        """`!include file.yaml:["key"][0]`: data from another file, subscripts applied."""
        if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
            raise SpecError(
                "!include needs a file name",
                self._where(node),
                hint='write !include file.yaml or !include file.yaml:["key"]',
            )
        spec = str(node.value)
        filename, _, subscript = spec.partition(":")
        found = self._find_include(filename.strip(), node)
        data = self._read_included(found, node)
        for key in _subscripts(subscript, self._where(node)):
            data = self._subscripted(data, key, spec, node)
        return data

    def _find_include(self, filename: str, node: yaml.Node) -> str:
        """The included file's path: the first folder of the include path that holds it; not
        found, or already being read (a loop), is an error."""
        found = next(
            (
                os.path.join(p, filename)
                for p in self.include_path
                if os.path.isfile(os.path.join(p, filename))
            ),
            None,
        )
        if found is None:
            raise SpecError(
                f"!include: '{filename}' not found in the include path",
                self._where(node),
                hint="searched: "
                + ", ".join(dict.fromkeys(self.include_path))
                + "; add a folder with --include-path or JUBE_INCLUDE_PATH",
            )
        if os.path.abspath(found) in self.chain:
            raise SpecError(
                f"!include: '{filename}' is already being read (an include loop)",
                self._where(node),
                hint="include chain: " + " -> ".join(self.chain + (os.path.abspath(found),)),
            )
        return found

    def _read_included(self, found: str, node: yaml.Node) -> YamlData:
        """The included file's value; its errors say where it was included from."""
        sub = _YamlReader(found, self.include_path, self.chain)
        included = _read_text(found, self._where(node))
        try:
            sub.loader, document = _compose(included, found)
            _check_expanded_size(document, found)
            return sub._value(document) if document is not None else None
        except SpecError as exc:
            hint = "; ".join(h for h in (exc.hint, f"included from {self._where(node)}") if h)
            raise SpecError(exc.message, exc.where, hint=hint) from None

    def _subscripted(self, data: YamlData, key: object, spec: str, node: yaml.Node) -> YamlData:
        """`data[key]` of an included value; a mapping's single item is the item itself."""
        try:
            data = data[key][1] if isinstance(data, dict) else data[key][0]
        except (KeyError, IndexError, TypeError):
            raise SpecError(f"!include: {spec!r} has no entry {key!r}", self._where(node)) from None
        return _single_item(data) if isinstance(key, str) else data

    # --- building nodes ---------------------------------------------------------------------
    def _make(self, tag: str, data: YamlData, ynode: yaml.Node, parent: Node) -> None:
        """The elements `tag` of `data`: one per item where it is a list of (item, node) pairs (a
        key's items, or an !include that gave several values)."""
        if isinstance(data, list):
            for item, inode in data:
                self._make(tag, item, inode, parent)
        elif tag == "meta":
            self._make_meta(data, ynode, parent)
        else:
            self._make_element(tag, data, ynode, parent)

    def _make_element(self, tag: str, data: YamlData, ynode: yaml.Node, parent: Node) -> None:
        """One element: its text, or its mapping's children, text and attributes."""
        self._check_element_value(tag, data, ynode)
        node = Node(tag, where=self._where(ynode))
        parent.children.append(node)
        if not isinstance(data, dict):
            node.text = _text(data)
            return
        for key, (knode, items) in data.items():
            for item, inode in items:
                self._make_entry(node, key, knode, item, inode)

    def _check_element_value(self, tag: str, data: YamlData, ynode: yaml.Node) -> None:
        """An element written as a mapping needs a mapping; a text element needs a text."""
        if tag in MAPPING_TAGS and not isinstance(data, dict):
            found = "an empty value" if data is None else f"{_text(data)!r}"
            raise SpecError(
                f"{tag}: found {found} where a mapping was expected",
                self._where(ynode),
                hint=f"write {tag}: {{name: ..., ...}} (or a list of such mappings)",
            )
        if tag in TEXT_TAGS:
            self._check_text_element(tag, data, ynode)

    def _make_entry(
        self, node: Node, key: str, knode: yaml.Node, item: YamlData, inode: yaml.Node
    ) -> None:
        """One item of an element's key: a child element, the element's text (_) or an
        attribute."""
        children = CHILD_TAGS.get(node.tag, set())
        if key in children:
            self._make(key, item, inode, node)
            return
        if isinstance(item, (dict, list)):
            self._refuse_nested(node.tag, key, knode, item)
        if key == "_" and not children:
            node.text = _text(item)
        else:
            node.attrs[key] = _text(item)
            node.attr_lines[key] = knode.start_mark.line + 1

    def _refuse_nested(self, tag: str, key: str, knode: yaml.Node, item: YamlData) -> None:
        """A mapping or list as the text (_) or under a misspelt child element's key is an error;
        under other unknown keys it is ignored as JUBE ignores them (e.g. a key that only holds a
        `&anchor`)."""
        if key == "_":
            raise SpecError(
                f"{tag}: the text (_) holds a {'mapping' if isinstance(item, dict) else 'list'}",
                self._where(knode),
                hint='expected a single text value, e.g. _: "1,2,4"',
            )
        self._refuse_misspelt_child(key, knode, CHILD_TAGS.get(tag, set()), f"in {tag}")

    def _refuse_misspelt_child(
        self, key: str, knode: yaml.Node, children: set[str], place: str
    ) -> None:
        """An unknown key close to a child element's name is a misspelt child: an error."""
        misspelt = did_you_mean(key, children)
        if misspelt:
            raise SpecError(f"unknown key '{key}' {place}", self._where(knode), hint=misspelt)

    def _check_text_element(self, tag: str, data: YamlData, ynode: yaml.Node) -> None:
        """A command or file name that YAML did not read as text is an error, never an empty
        element: `- echo 'sanity: failed'` is the mapping {"echo 'sanity": "failed'"} to YAML."""
        if data is None:
            raise SpecError(
                f"{tag}: found an empty value where a text was expected",
                self._where(ynode),
                hint=f"write the {tag}'s text, or remove the empty entry",
            )
        stray = _stray_key(tag, data)
        if stray is not None:
            self._refuse_text_mapping(tag, stray, data[stray])

    def _refuse_text_mapping(self, tag: str, key: str, entry: YamlData) -> None:
        """The error for a text element YAML read as a mapping because of `key`: a misspelt
        attribute, or an unquoted ': ' in the text."""
        knode, items = entry
        item = items[0][0]
        value = _text(item)
        misspelt = did_you_mean(key, TEXT_TAGS[tag])
        if misspelt:
            raise SpecError(
                f"{tag}: unknown key '{key}' and no text (_)", self._where(knode), hint=misspelt
            )
        if isinstance(item, (dict, list)):
            cause = f"its key {key!r} holds a {'mapping' if isinstance(item, dict) else 'list'}"
        else:
            cause = f"of ': ' (it read {key!r} as a key and {value!r} as its value)"
        quoted = f': "{key}: {value}"' if '"' not in key + value else ""
        raise SpecError(
            f"{tag}: YAML read this {tag} as a mapping, not as a text, because {cause}",
            self._where(knode),
            hint=f"quote the {tag}'s whole text"
            + quoted
            + f", or write it as a block (| and the text on the next lines); a {tag} mapping takes "
            "only " + ", ".join(sorted(TEXT_TAGS[tag] | {"_"})),
        )

    def _make_meta(self, data: YamlData, ynode: yaml.Node, parent: Node) -> None:
        """`meta:` (caramel): one child per key and list item, so XML's `<meta>` reads the same."""
        node = Node("meta", where=self._where(ynode))
        parent.children.append(node)
        if data is None:
            return
        if not isinstance(data, dict):
            raise SpecError(
                f"meta: found {_text(data)!r} where a mapping was expected",
                self._where(ynode),
                hint='write meta: {description: ..., tags: [a, b], time_limit: "01:00:00"}',
            )
        for key, (_knode, items) in data.items():
            for item, inode in items:
                if isinstance(item, (dict, list)):
                    raise SpecError(
                        f"meta: '{key}' holds a "
                        f"{'mapping' if isinstance(item, dict) else 'nested list'}",
                        self._where(inode),
                        hint="expected a text, a number or a list of texts",
                    )
                node.children.append(Node(key, text=_text(item), where=self._where(inode)))


def _compose(text: str, path: str) -> tuple[yaml.SafeLoader, yaml.Node | None]:
    """(the loader, the document's node tree): libyaml's parse; where it finds an error, the
    pure-Python parser's, whose messages caramel's errors and tests have always quoted."""
    if hasattr(yaml, "CSafeLoader"):
        loader = _FastLoader(text)
        try:
            return loader, loader.get_single_node()
        except yaml.YAMLError:
            pass
        finally:
            loader.dispose()
    loader = _new_loader(text, path)  # a control character: a SpecError at its line
    return loader, _YamlReader._parse(loader, path)


def _check_expanded_size(document: yaml.Node | None, path: str) -> None:
    """Refuse a document whose aliases expand it beyond MAX_EXPANDED_NODES values, naming the line
    of the innermost list or mapping that crosses the limit; counted once per node, so it is
    fast."""
    sizes: dict[int, int] = {}
    culprit: list[yaml.Node] = []

    def size(node: yaml.Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        sizes[id(node)] = 1  # a cycle (not possible from the composer) counts once
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        if total > MAX_EXPANDED_NODES and not culprit:
            culprit.append(node)
        sizes[id(node)] = total
        return total

    if document is not None and size(document) > MAX_EXPANDED_NODES:
        raise SpecError(
            f"the aliases (*name) of this file expand it to {size(document):,} YAML values, more "
            f"than the {MAX_EXPANDED_NODES:,} allowed",
            Location(path, culprit[0].start_mark.line + 1),
            hint="an alias repeats its anchor's whole value; is this file an alias bomb?",
        )


def _text(value: YamlData) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return str(_plain(value))  # as JUBE writes it: str() of the YAML value
    return str(value)


def _plain(value: YamlData) -> object:
    """A `_value()` result without its YAML nodes: plain dicts, lists and scalars."""
    if isinstance(value, dict):
        return {
            k: _plain(items[0][0]) if len(items) == 1 else [_plain(i) for i, _ in items]
            for k, (_knode, items) in value.items()
        }
    if isinstance(value, list):
        return [_plain(item) for item, _node in value]
    return value


def _subscripts(text: str, where: Location) -> list[object]:
    """Parse `["a"][0]` into ["a", 0] with literal_eval only."""
    keys: list[object] = []
    rest = text.strip()
    while rest:
        if not rest.startswith("["):
            raise SpecError(
                f"!include: cannot read subscript {text!r}", where, hint='write file.yaml:["key"]'
            )
        end = rest.find("]")
        if end < 0:
            raise SpecError(
                f"!include: cannot read subscript {text!r}: missing ']'",
                where,
                hint='write file.yaml:["key"]',
            )
        try:
            keys.append(ast.literal_eval(rest[1:end]))
        except (ValueError, SyntaxError):
            raise SpecError(
                f"!include: cannot read subscript {text!r}", where, hint='write file.yaml:["key"]'
            ) from None
        rest = rest[end + 1 :].strip()
    return keys


def _context_hint(exc: yaml.MarkedYAMLError, line: int) -> str:
    """Where the construct YAML was reading began, when that is not the error's line."""
    if exc.problem and exc.context and exc.context_mark and exc.context_mark.line + 1 != line:
        return f"{exc.context} that starts at line {exc.context_mark.line + 1}"
    return ""


def _stray_key(tag: str, data: YamlData) -> str | None:
    """The first key of a text element's mapping that is not one of its attributes, where the
    mapping has no text (_): YAML read the text as a mapping."""
    if not isinstance(data, dict) or "_" in data:
        return None
    return next((key for key in data if key not in TEXT_TAGS[tag]), None)


def _single_item(data: YamlData) -> YamlData:
    """A mapping key's value: its one item where it has one, else its (item, node) pairs."""
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], tuple):
        return data[0][0]
    return data
