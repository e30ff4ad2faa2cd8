"""Building sets (parameter, substitute, file and pattern sets) from a Node tree, `init_with`
included."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec import model as m
from caramel.stages.spec.attributes import (
    NAME_RE,
    boolean,
    choice,
    name_of,
    only_children,
    pattern_direction,
    pattern_unit,
    split_list,
    type_of,
)
from caramel.stages.spec.grammar import children_of, choices
from caramel.stages.spec.sources import IncludePath, expand_includes, read_tree, remove_inactive
from caramel.stages.spec.tree import Node

SET_KINDS = ("parameterset", "substituteset", "fileset", "patternset")


def add_parameter(pset: m.Parameterset, param: m.Parameter) -> None:
    """Add with JUBE's duplicate rules: replace (default), concat (union of values) or error."""
    existing = next((i for i, p in enumerate(pset.parameters) if p.name == param.name), None)
    if existing is None:
        pset.parameters.append(param)
        return
    pset.parameters[existing] = _duplicate(pset, pset.parameters[existing], param)


def _duplicate(pset: m.Parameterset, old: m.Parameter, param: m.Parameter) -> m.Parameter:
    """What takes the place of `old` when `param` of the same name is added."""
    if old.duplicate != param.duplicate:
        raise SpecError(
            f"parameter '{param.name}' is defined twice with different duplicate= options",
            param.where,
            hint=f"first definition at {old.where}",
        )
    mode = param.duplicate if param.duplicate != m.DuplicateMode.NONE else pset.duplicate
    if mode == m.DuplicateMode.ERROR:
        raise SpecError(
            f"parameter '{param.name}' is defined twice in parameterset '{pset.name}'",
            param.where,
            hint=f'first definition at {old.where}; duplicate="error" forbids this',
        )
    if mode == m.DuplicateMode.CONCAT:
        return _concatenated(old, param)
    return param


def _concatenated(old: m.Parameter, param: m.Parameter) -> m.Parameter:
    """`param` holding the union of both parameters' values, sorted."""
    if (old.separator, old.type, old.update_mode) != (
        param.separator,
        param.type,
        param.update_mode,
    ):
        raise SpecError(
            f"parameter '{param.name}' is concatenated with different separator, type or "
            "update_mode",
            param.where,
            hint=f"first definition at {old.where}",
        )
    if old.value == param.value:
        return param
    values = sorted(_value_set(old) | _value_set(param))
    return m.Parameter(**{**param.__dict__, "value": param.separator.join(values)})


def _value_set(param: m.Parameter) -> set[str]:
    """A parameter's values, split at its separator and stripped."""
    return {
        v.strip()
        for v in (param.value.split(param.separator) if param.separator else [param.value])
    }


_Item = TypeVar("_Item")
_Set = TypeVar("_Set")


def _replacing(items: list[_Item], new: _Item, key: Callable[[_Item], object]) -> list[_Item]:
    """`items` without those of `new`'s key, and `new` last."""
    return [item for item in items if key(item) != key(new)] + [new]


def _as_kind(base: AnySet | None, kind: type[_Set]) -> _Set | None:
    """The init_with set `base` where it is of `kind`."""
    return base if isinstance(base, kind) else None


def _sets_named(tree: Node, kinds: tuple[str, ...], name: str) -> list[Node]:
    """The sets of `kinds` in `tree` named `name`, in document order."""
    return [n for n in tree.iter() if n.tag in kinds and n.attrs.get("name", "").strip() == name]


def _not_found_hint(name: str, tree: Node, kinds: tuple[str, ...], listed: str, none: str) -> str:
    """A close name of the sets of `kinds` in `tree`, else their names (`listed` first), else
    `none`."""
    names = [n.attrs.get("name", "") for n in tree.iter() if n.tag in kinds]
    listing = listed + ", ".join(sorted(set(names))) if names else none
    return did_you_mean(name, names) or listing


def _initialised_with_itself(node: Node, filename: str, search: str) -> bool:
    """The set `search` of file `filename` whose init_with names itself."""
    return (
        node.attrs.get("init_with", "").strip().partition(":")[0].strip() == filename
        and (node.attrs.get("init_with", "").partition(":")[2].strip() or search) == search
    )


def _zip(child: Node) -> m.Zip:
    names = split_list(child.attrs.get("names", "") or child.text) + [
        p.text.strip() for p in child.findall("param")
    ]
    if len(names) < 2:
        raise SpecError(
            "<zip> needs at least two parameter names",
            child.where,
            hint='write <zip names="a,b"/> (YAML: zip: {names: "a,b"})',
        )
    return m.Zip(names, child.where)


def _add_zip(pset: m.Parameterset, new: m.Zip) -> None:
    """`new` among the set's zips: a zip naming the same parameters as one before is that one; a
    parameter in two different zips is an error (which of its values would go with which?)."""
    for earlier in pset.zips:
        if set(earlier.names) == set(new.names):
            return
        shared = [name for name in new.names if name in earlier.names]
        if shared:
            other = earlier.where
            at = f"line {other.line}" if other.file == new.where.file else str(other)
            raise SpecError(
                f"parameter '{shared[0]}' is in two <zip>s of parameterset '{pset.name}' (the "
                f"other at {at})",
                new.where,
                hint="a parameter varies with one zip: put the parameters that go together in one",
            )
    pset.zips.append(new)


def _exclude(child: Node) -> m.Exclude:
    condition = (child.attrs.get("if") or child.text).strip()
    if not condition:
        raise SpecError(
            "<exclude> needs a condition",
            child.where,
            hint="write <exclude>$nodes > 4 and $batch < 64</exclude>",
        )
    return m.Exclude(condition, child.where)


def _new_parameterset(node: Node, name: str, base: m.Parameterset | None) -> m.Parameterset:
    """An empty parameterset, or one with `base`'s (init_with) parameters, zips and excludes."""
    duplicate = m.DuplicateMode(
        choice(
            node,
            "duplicate",
            base.duplicate if base else "replace",
            ("replace", "concat", "error"),
        )
    )
    if base is None:
        return m.Parameterset(name, [], duplicate, [], [], node.where)
    return m.Parameterset(
        name, list(base.parameters), duplicate, list(base.zips), list(base.excludes), node.where
    )


def _iofile(child: Node) -> m.IOFile:
    src = child.attrs.get("in", "").strip()
    dest = child.attrs.get("out", "").strip()
    if not src or not dest:
        missing = " and ".join(a + "=" for a, v in (("in", src), ("out", dest)) if not v)
        raise SpecError(
            f"<iofile> has no {missing}",
            child.where,
            hint='write <iofile in="job.in" out="job.sh"/> (YAML: iofile: {in: '
            "job.in, out: job.sh})",
        )
    return m.IOFile(src, dest, child.attrs.get("out_mode", "w").strip(), child.where)


def _sub(child: Node) -> m.Sub:
    source = child.attrs.get("source")
    if source is None:
        raise SpecError("<sub> needs source=", child.where, hint='<sub source="#X#" dest="$x"/>')
    dest_attr = child.attrs.get("dest")
    dest = child.text.strip() if dest_attr is None else dest_attr
    return m.Sub(source, dest, child.attrs.get("mode", "text").strip(), child.where)


# A set of any kind, as `SetBuilder.set` builds one
AnySet = m.Parameterset | m.Substituteset | m.Fileset | m.Patternset


class SetBuilder:
    """Builds sets; keeps the include path and tags for `init_with` / `use from=`."""

    def __init__(self, include: IncludePath, tags: set[str], home: str) -> None:
        self.include = include
        self.tags = tags
        self.home = home
        self._trees: dict[str, Node] = {}

    def sets(self, parent: Node, base_dir: str | None = None) -> dict[str, dict[str, AnySet]]:
        out: dict[str, dict[str, AnySet]] = {kind: {} for kind in SET_KINDS}
        for child in parent.children:
            if child.tag in SET_KINDS:
                built = self.set(child, base_dir or self.home)
                if built.name in out[child.tag]:
                    raise SpecError(
                        f"{child.tag} '{built.name}' is defined twice",
                        child.where,
                        hint=f"first definition at {out[child.tag][built.name].where}",
                    )
                out[child.tag][built.name] = built
        return out

    def set(self, node: Node, base_dir: str, name: str | None = None) -> AnySet:
        name = name or name_of(node)
        base = self._init_with(node, name)
        kind = node.tag  # extern_set finds a set of the same kind: `base` is one
        if kind == "parameterset":
            return self.parameterset(node, name, _as_kind(base, m.Parameterset))
        if kind == "substituteset":
            return self.substituteset(node, name, _as_kind(base, m.Substituteset))
        if kind == "fileset":
            return self.fileset(node, name, _as_kind(base, m.Fileset), base_dir)
        return self.patternset(node, name, _as_kind(base, m.Patternset))

    def _init_with(self, node: Node, name: str) -> AnySet | None:
        """The set `init_with="file:name"` names (its name defaults to the set's own)."""
        init = node.attrs.get("init_with", "").strip()
        if not init:
            return None
        filename, _, search = init.partition(":")
        return self.extern_set(node.tag, filename.strip(), search.strip() or name, node.where, name)

    def extern_set(
        self, kind: str, filename: str, search: str, where: Location, name: str | None = None
    ) -> AnySet:
        """The set `search` of kind `kind` from another file, found through the include path."""
        path = self.include.find(filename, where)
        tree = self._tree(path)
        found = _sets_named(tree, (kind,), search)
        if not found:
            raise SpecError(
                f"{kind} '{search}' not found in {path}",
                where,
                hint=_not_found_hint(
                    search, tree, (kind,), f"its {kind}s: ", f"that file has no {kind}"
                ),
            )
        if len(found) > 1:
            raise SpecError(f"{kind} '{search}' is defined {len(found)} times in {path}", where)
        node = found[0]
        if _initialised_with_itself(node, filename, search):
            raise SpecError(f"{kind} '{search}' is initialised with itself", node.where)
        return self.set(node, os.path.dirname(path), name or search)

    def find_set_kind(self, filename: str, name: str, where: Location) -> str:
        path = self.include.find(filename, where)
        tree = self._tree(path)
        kinds = {n.tag for n in _sets_named(tree, SET_KINDS, name)}
        if not kinds:
            raise SpecError(
                f"no set named '{name}' in {path}",
                where,
                hint=_not_found_hint(name, tree, SET_KINDS, "its sets: ", "that file has no sets"),
            )
        if len(kinds) > 1:
            raise SpecError(
                f"'{name}' names sets of several kinds in {path}: {', '.join(sorted(kinds))}", where
            )
        return kinds.pop()

    def _tree(self, path: str) -> Node:
        path = os.path.abspath(path)
        if path not in self._trees:
            tree = read_tree(path, self.include.folders)
            remove_inactive(tree, self.tags)
            expand_includes(tree, self.include, self.tags)
            self._trees[path] = tree
        return self._trees[path]

    def parameterset(self, node: Node, name: str, base: m.Parameterset | None) -> m.Parameterset:
        only_children(node, children_of("parameterset"))
        pset = _new_parameterset(node, name, base)
        for child in node.children:
            if child.tag == "parameter":
                add_parameter(pset, self.parameter(child))
            elif child.tag == "zip":
                _add_zip(pset, _zip(child))
            else:
                pset.excludes.append(_exclude(child))
        return pset

    def parameter(self, node: Node) -> m.Parameter:
        name = name_of(node, "parameter")
        if not NAME_RE.match(name):
            raise SpecError(
                f"parameter name {name!r} has a character that is not allowed",
                node.where,
                hint="names start with a letter or _ and hold letters, digits and _",
            )
        value_node = node.find("value")
        text = (value_node.text if value_node is not None else node.text) or ""
        ptype = type_of(node, "parameter", name)
        return m.Parameter(
            name=name,
            value=text.strip(),
            separator=node.attrs.get("separator", ","),
            type=ptype,
            mode=m.ParameterMode(choice(node, "mode", "text", m.PARAMETER_MODES)),
            unit=node.attrs.get("unit", "").strip(),
            export=boolean(node, "export", False),
            update_mode=m.UpdateMode(choice(node, "update_mode", "never", m.UPDATE_MODES)),
            duplicate=m.DuplicateMode(choice(node, "duplicate", "none", m.DUPLICATE_MODES)),
            where=node.where,
        )

    def substituteset(self, node: Node, name: str, base: m.Substituteset | None) -> m.Substituteset:
        only_children(node, children_of("substituteset"))
        sset = m.Substituteset(
            name, list(base.iofiles) if base else [], list(base.subs) if base else [], node.where
        )
        for child in node.children:
            if child.tag == "iofile":
                sset.iofiles = _replacing(sset.iofiles, _iofile(child), lambda f: f.dest)
            else:
                sset.subs = _replacing(sset.subs, _sub(child), lambda s: s.source)
        return sset

    def fileset(self, node: Node, name: str, base: m.Fileset | None, base_dir: str) -> m.Fileset:
        only_children(node, children_of("fileset"))
        fset = m.Fileset(name, list(base.entries) if base else [], node.where)
        for child in node.children:
            if child.tag == "prepare":
                fset.entries.append(
                    m.FileEntry(
                        m.FileAction.PREPARE,
                        child.text.strip(),
                        stdout=child.attrs.get("stdout", "").strip(),
                        stderr=child.attrs.get("stderr", "").strip(),
                        work_dir=child.attrs.get("work_dir", "").strip(),
                        active=child.attrs.get("active", "true").strip(),
                        base_dir=base_dir,
                        where=child.where,
                    )
                )
                continue
            text = child.text.strip()
            if not text:
                raise SpecError(
                    f"<{child.tag}> needs a file name",
                    child.where,
                    hint=f"write <{child.tag}>file.in</{child.tag}>",
                )
            rel = choice(child, "rel_path_ref", "external", choices(child.tag, "rel_path_ref"))
            fset.entries.append(
                m.FileEntry(
                    m.FileAction(child.tag),
                    text,
                    name=child.attrs.get("name", "").strip(),
                    rel_path_ref=rel,
                    base_dir=base_dir,
                    separator=child.attrs.get("separator", ","),
                    source_dir=child.attrs.get(
                        "source_dir", child.attrs.get("directory", "")
                    ).strip(),
                    target_dir=child.attrs.get("target_dir", "").strip(),
                    active=child.attrs.get("active", "true").strip(),
                    where=child.where,
                )
            )
        return fset

    def patternset(self, node: Node, name: str, base: m.Patternset | None) -> m.Patternset:
        only_children(node, children_of("patternset"))
        pset = m.Patternset(name, list(base.patterns) if base else [], node.where)
        for child in node.children:
            pname = name_of(child, "pattern")
            ptype = type_of(child, "pattern", pname)
            pattern = m.Pattern(
                pname,
                child.text.strip(),
                ptype,
                choice(child, "mode", "pattern", choices("pattern", "mode")),
                pattern_unit(child, pname),
                child.attrs.get("default"),
                boolean(child, "dotall", False),
                child.attrs.get("reduce", "first").strip(),
                child.where,
                pattern_direction(child, pname),
            )
            pset.patterns = _replacing(pset.patterns, pattern, lambda p: p.name)
        return pset
