"""Build model objects from a (tag-filtered, include-expanded) Node tree.

Unknown attributes are ignored, as JUBE ignores them (CARAML writes `seperator`); unknown
elements and bad values are errors naming file, line and what was expected.
"""

from __future__ import annotations

import os
import re
import sys

from caramel.errors import Location, SpecError, did_you_mean
from caramel.spec import model as m
from caramel.spec.limits import parse_copies, parse_duration
from caramel.spec.meta import find_meta_node, read_meta
from caramel.spec.sources import IncludePath, expand_includes, read_tree, remove_inactive
from caramel.spec.tree import Node
from caramel.vocabulary import plain_bool

NAME_RE = re.compile(r"^[^\d\W]\w*$")
SET_KINDS = ("parameterset", "substituteset", "fileset", "patternset")


def _bool(node: Node, attr: str, default: bool) -> bool:
    value = node.attrs.get(attr)
    if value is None:
        return default
    plain = plain_bool(value) if value.strip() else False
    if plain is not None:
        return plain
    raise SpecError(f"{attr}={value!r} on <{node.tag}> is not a boolean", node.where, hint="expected true or false")


def _int(node: Node, attr: str, default: int) -> int:
    value = node.attrs.get(attr)
    if value is None or not value.strip():
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise SpecError(f"{attr}={value!r} on <{node.tag}> is not a whole number", node.where,
                        hint=f'expected digits, e.g. {attr}="2"') from None


def _choice(node: Node, attr: str, default: str, allowed: tuple[str, ...]) -> str:
    value = node.attrs.get(attr, default).strip()
    if value not in allowed:
        hint = did_you_mean(value, allowed) or "expected one of: " + ", ".join(allowed)
        raise SpecError(f"{attr}={value!r} on <{node.tag} name={node.attrs.get('name', '')!r}> is not allowed",
                        node.where, hint=hint)
    return value


def _name(node: Node, what: str | None = None) -> str:
    name = node.attrs.get("name", "").strip()
    if not name:
        raise SpecError(f"<{what or node.tag}> needs a name", node.where,
                        hint=f'write <{node.tag} name="..."> (YAML: name: ...)')
    return name


def _type(node: Node, what: str, name: str) -> str:
    """The type= of a parameter or pattern; any other name is a string, as JUBE treats it (with a warning)."""
    ptype = node.attrs.get("type", "string").strip()
    if ptype in m.PARAMETER_TYPES:
        return ptype
    hint = did_you_mean(ptype, m.PARAMETER_TYPES)
    print(f"warning: {node.where}: type={ptype!r} of {what} '{name}' is not int, float or string; treated as a "
          f"string, as JUBE does" + (f" ({hint})" if hint else ""), file=sys.stderr)
    return "string"


def _file_name(name: str, what: str, folder: str, where: Location) -> str:
    """A name that becomes a file or folder name must stay inside `folder`: no separator, no `..`."""
    bad = next((part for part in ("/", "\\", "..", "\0") if part in name), None)
    if bad is not None or name == ".":
        shown = "the NUL character" if bad == "\0" else repr(bad or name)
        raise SpecError(f"{what} name {name!r} would be a file outside {folder}: it holds {shown}", where,
                        hint="a name that becomes a file name holds no /, \\ or ..; put folders in result_dir= "
                             "or the database's file=")
    return name


def _split(text: str, sep: str = ",") -> list[str]:
    return [v.strip() for v in text.split(sep) if v.strip()]


def _only(node: Node, allowed: set[str]) -> None:
    for child in node.children:
        if child.tag not in allowed:
            hint = did_you_mean(child.tag, allowed) or "expected " + ", ".join(f"<{a}>" for a in sorted(allowed))
            raise SpecError(f"unknown element <{child.tag}> in <{node.tag}>", child.where, hint=hint)


def add_parameter(pset: m.Parameterset, param: m.Parameter) -> None:
    """Add with JUBE's duplicate rules: replace (default), concat (union of values) or error."""
    existing = next((i for i, p in enumerate(pset.parameters) if p.name == param.name), None)
    if existing is None:
        pset.parameters.append(param)
        return
    old = pset.parameters[existing]
    if old.duplicate != param.duplicate:
        raise SpecError(f"parameter '{param.name}' is defined twice with different duplicate= options",
                        param.where, hint=f"first definition at {old.where}")
    mode = param.duplicate if param.duplicate != "none" else pset.duplicate
    if mode == "error":
        raise SpecError(f"parameter '{param.name}' is defined twice in parameterset '{pset.name}'", param.where,
                        hint=f"first definition at {old.where}; duplicate=\"error\" forbids this")
    if mode == "concat":
        if (old.separator, old.type, old.update_mode) != (param.separator, param.type, param.update_mode):
            raise SpecError(f"parameter '{param.name}' is concatenated with different separator, type or "
                            "update_mode", param.where, hint=f"first definition at {old.where}")
        if old.value != param.value:
            values = sorted({v.strip() for v in (old.value.split(old.separator) if old.separator else [old.value])} |
                            {v.strip() for v in (param.value.split(param.separator) if param.separator else [param.value])})
            param = m.Parameter(**{**param.__dict__, "value": param.separator.join(values)})
        pset.parameters[existing] = param
        return
    pset.parameters[existing] = param


class Builder:
    """Builds sets and benchmarks; keeps the include path and tags for `init_with` / `use from=`."""

    def __init__(self, include: IncludePath, tags: set[str], home: str) -> None:
        self.include = include
        self.tags = tags
        self.home = home
        self._trees: dict[str, Node] = {}

    # --- sets -----------------------------------------------------------------------------------
    def sets(self, parent: Node, base_dir: str | None = None) -> dict[str, dict]:
        out: dict[str, dict] = {kind: {} for kind in SET_KINDS}
        for child in parent.children:
            if child.tag in SET_KINDS:
                built = self.set(child, base_dir or self.home)
                if built.name in out[child.tag]:
                    raise SpecError(f"{child.tag} '{built.name}' is defined twice", child.where,
                                    hint=f"first definition at {out[child.tag][built.name].where}")
                out[child.tag][built.name] = built
        return out

    def set(self, node: Node, base_dir: str, name: str | None = None):
        name = name or _name(node)
        init = node.attrs.get("init_with", "").strip()
        base = None
        if init:
            filename, _, search = init.partition(":")
            base = self.extern_set(node.tag, filename.strip(), search.strip() or name, node.where, name)
        kind = node.tag
        if kind == "parameterset":
            return self.parameterset(node, name, base)
        if kind == "substituteset":
            return self.substituteset(node, name, base)
        if kind == "fileset":
            return self.fileset(node, name, base, base_dir)
        return self.patternset(node, name, base)

    def extern_set(self, kind: str, filename: str, search: str, where: Location, name: str | None = None):
        """The set `search` of kind `kind` from another file, found through the include path."""
        path = self.include.find(filename, where)
        tree = self._tree(path)
        found = [n for n in tree.iter(kind) if n.attrs.get("name", "").strip() == search]
        if not found:
            names = [n.attrs.get("name", "") for n in tree.iter(kind)]
            raise SpecError(f"{kind} '{search}' not found in {path}", where, hint=did_you_mean(search, names) or (
                f"its {kind}s: " + ", ".join(sorted(set(names))) if names else f"that file has no {kind}"))
        if len(found) > 1:
            raise SpecError(f"{kind} '{search}' is defined {len(found)} times in {path}", where)
        node = found[0]
        if node.attrs.get("init_with", "").strip().partition(":")[0].strip() == filename and \
                (node.attrs.get("init_with", "").partition(":")[2].strip() or search) == search:
            raise SpecError(f"{kind} '{search}' is initialised with itself", node.where)
        return self.set(node, os.path.dirname(path), name or search)

    def find_set_kind(self, filename: str, name: str, where: Location) -> str:
        path = self.include.find(filename, where)
        tree = self._tree(path)
        kinds = {n.tag for n in tree.iter() if n.tag in SET_KINDS and n.attrs.get("name", "").strip() == name}
        if not kinds:
            names = [n.attrs.get("name", "") for n in tree.iter() if n.tag in SET_KINDS]
            raise SpecError(f"no set named '{name}' in {path}", where, hint=did_you_mean(name, names) or (
                "its sets: " + ", ".join(sorted(set(names))) if names else "that file has no sets"))
        if len(kinds) > 1:
            raise SpecError(f"'{name}' names sets of several kinds in {path}: {', '.join(sorted(kinds))}", where)
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
        _only(node, {"parameter", "zip", "exclude"})
        duplicate = _choice(node, "duplicate", base.duplicate if base else "replace", ("replace", "concat", "error"))
        pset = m.Parameterset(name, list(base.parameters) if base else [], duplicate,
                              list(base.zips) if base else [], list(base.excludes) if base else [], node.where)
        for child in node.children:
            if child.tag == "parameter":
                add_parameter(pset, self.parameter(child))
            elif child.tag == "zip":
                names = _split(child.attrs.get("names", "") or child.text) + \
                    [p.text.strip() for p in child.findall("param")]
                if len(names) < 2:
                    raise SpecError("<zip> needs at least two parameter names", child.where,
                                    hint='write <zip names="a,b"/> (YAML: zip: {names: "a,b"})')
                pset.zips.append(m.Zip(names, child.where))
            else:
                condition = (child.attrs.get("if") or child.text).strip()
                if not condition:
                    raise SpecError("<exclude> needs a condition", child.where,
                                    hint="write <exclude>$nodes > 4 and $batch < 64</exclude>")
                pset.excludes.append(m.Exclude(condition, child.where))
        return pset

    def parameter(self, node: Node) -> m.Parameter:
        name = _name(node, "parameter")
        if not NAME_RE.match(name):
            raise SpecError(f"parameter name {name!r} has a character that is not allowed", node.where,
                            hint="names start with a letter or _ and hold letters, digits and _")
        value_node = node.find("value")
        text = (value_node.text if value_node is not None else node.text) or ""
        ptype = _type(node, "parameter", name)
        return m.Parameter(
            name=name,
            value=text.strip(),
            separator=node.attrs.get("separator", ","),
            type=ptype,
            mode=_choice(node, "mode", "text", m.PARAMETER_MODES),
            unit=node.attrs.get("unit", "").strip(),
            export=_bool(node, "export", False),
            update_mode=_choice(node, "update_mode", "never", m.UPDATE_MODES),
            duplicate=_choice(node, "duplicate", "none", m.DUPLICATE_MODES),
            where=node.where,
        )

    def substituteset(self, node: Node, name: str, base: m.Substituteset | None) -> m.Substituteset:
        _only(node, {"iofile", "sub"})
        sset = m.Substituteset(name, list(base.iofiles) if base else [], list(base.subs) if base else [],
                               node.where)
        for child in node.children:
            if child.tag == "iofile":
                src = child.attrs.get("in", "").strip()
                dest = child.attrs.get("out", "").strip()
                if not src or not dest:
                    missing = " and ".join(a + "=" for a, v in (("in", src), ("out", dest)) if not v)
                    raise SpecError(f"<iofile> has no {missing}", child.where,
                                    hint='write <iofile in="job.in" out="job.sh"/> (YAML: iofile: {in: job.in, out: job.sh})')
                sset.iofiles = [f for f in sset.iofiles if f.dest != dest]
                sset.iofiles.append(m.IOFile(src, dest, child.attrs.get("out_mode", "w").strip(), child.where))
            else:
                source = child.attrs.get("source")
                if source is None:
                    raise SpecError("<sub> needs source=", child.where, hint='<sub source="#X#" dest="$x"/>')
                dest = child.attrs.get("dest")
                if dest is None:
                    dest = child.text.strip()
                sset.subs = [s for s in sset.subs if s.source != source]
                sset.subs.append(m.Sub(source, dest, child.attrs.get("mode", "text").strip(), child.where))
        return sset

    def fileset(self, node: Node, name: str, base: m.Fileset | None, base_dir: str) -> m.Fileset:
        _only(node, {"copy", "link", "prepare"})
        fset = m.Fileset(name, list(base.entries) if base else [], node.where)
        for child in node.children:
            if child.tag == "prepare":
                fset.entries.append(m.FileEntry(
                    "prepare", child.text.strip(), stdout=child.attrs.get("stdout", "").strip(),
                    stderr=child.attrs.get("stderr", "").strip(), work_dir=child.attrs.get("work_dir", "").strip(),
                    active=child.attrs.get("active", "true").strip(), base_dir=base_dir, where=child.where))
                continue
            text = child.text.strip()
            if not text:
                raise SpecError(f"<{child.tag}> needs a file name", child.where,
                                hint=f"write <{child.tag}>file.in</{child.tag}>")
            rel = child.attrs.get("rel_path_ref", "external").strip()
            if rel not in ("external", "internal"):
                raise SpecError(f"rel_path_ref={rel!r} is not allowed", child.where, hint="expected external or internal")
            fset.entries.append(m.FileEntry(
                child.tag, text, name=child.attrs.get("name", "").strip(), rel_path_ref=rel, base_dir=base_dir,
                separator=child.attrs.get("separator", ","), source_dir=child.attrs.get(
                    "source_dir", child.attrs.get("directory", "")).strip(),
                target_dir=child.attrs.get("target_dir", "").strip(), active=child.attrs.get("active", "true").strip(),
                where=child.where))
        return fset

    def patternset(self, node: Node, name: str, base: m.Patternset | None) -> m.Patternset:
        _only(node, {"pattern"})
        pset = m.Patternset(name, list(base.patterns) if base else [], node.where)
        for child in node.children:
            pname = _name(child, "pattern")
            ptype = _type(child, "pattern", pname)
            pattern = m.Pattern(
                pname, child.text.strip(), ptype,
                _choice(child, "mode", "pattern", ("pattern", "text", "python", "perl", "shell")),
                child.attrs.get("unit", "").strip(), child.attrs.get("default"),
                _bool(child, "dotall", False), child.attrs.get("reduce", "first").strip(), child.where)
            pset.patterns = [p for p in pset.patterns if p.name != pname] + [pattern]
        return pset

    # --- benchmark ----------------------------------------------------------------------------
    def benchmark(self, node: Node, global_sets: dict[str, dict], path: str) -> m.Benchmark:
        _only(node, {"parameterset", "substituteset", "fileset", "patternset", "step", "comment", "analyser",
                     "analyzer", "result", "meta"})
        name = _name(node, "benchmark")
        outpath = node.attrs.get("outpath", "").strip()
        if not outpath:
            raise SpecError(f"benchmark '{name}' needs an outpath", node.where,
                            hint='write outpath="bench_run" (YAML: outpath: bench_run)')
        ref = node.attrs.get("file_path_ref", ".").strip() or "."
        home = os.path.normpath(os.path.join(self.home, os.path.expandvars(os.path.expanduser(ref))))
        comment_node = node.find("comment")
        comment = re.sub(r"\s+", " ", comment_node.text if comment_node is not None else "").strip()
        local = self.sets(node, home)
        bench = m.Benchmark(name, outpath=os.path.normpath(os.path.join(
            self.home, os.path.expandvars(os.path.expanduser(outpath)))), comment=comment, file=path, home=home,
            tags=set(self.tags), where=node.where, meta=read_meta(find_meta_node(node)))
        for kind, attr in (("parameterset", "parametersets"), ("substituteset", "substitutesets"),
                           ("fileset", "filesets"), ("patternset", "patternsets")):
            merged = dict(global_sets[kind])
            for set_name, built in local[kind].items():
                if set_name in merged:
                    raise SpecError(f"{kind} '{set_name}' is defined both globally and in benchmark '{name}'",
                                    built.where)
                merged[set_name] = built
            setattr(bench, attr, merged)
        for child in node.findall("step"):
            step = self.step(child, bench)
            if step.name in bench.steps:
                raise SpecError(f"step '{step.name}' is defined twice", child.where,
                                hint=f"first definition at {bench.steps[step.name].where}; "
                                "give them tags that exclude each other")
            bench.steps[step.name] = step
        for child in node.findall("analyser") + node.findall("analyzer"):
            analyser = self.analyser(child, bench)
            bench.analysers[analyser.name] = analyser
        for child in node.findall("result"):
            bench.results.append(self.result(child, bench))
        return bench

    def use(self, node: Node, bench: m.Benchmark) -> m.Use:
        names = _split(node.text)
        source = node.attrs.get("from", "").strip()
        if not names:
            raise SpecError("<use> names no set", node.where, hint="write <use>setname</use>")
        if not source:
            return m.Use(names, node.where)
        resolved = []
        for set_name in names:
            # JUBE: `from="file:a:b"` loads sets a and b; the use names one of them, maybe through
            # a parameter (`set$index`), so each is registered as `<name>@<file>`.
            for file_part in source.split(","):
                filename, *alts = [p.strip() for p in file_part.split(":")]
                filename = filename or bench.file
                for search in [a for a in alts if a] or [set_name]:
                    if "$" in search:
                        continue
                    internal = f"{search}@{filename}"
                    kind = self.find_set_kind(filename, search, node.where)
                    pool = getattr(bench, kind + "s")
                    if internal not in pool:
                        pool[internal] = self.extern_set(kind, filename, search, node.where, search)
            resolved.append(f"{set_name}@{source.split(',')[0].split(':')[0].strip() or bench.file}")
        return m.Use(resolved, node.where)

    def step(self, node: Node, bench: m.Benchmark) -> m.Step:
        _only(node, {"use", "do"})
        name = _file_name(_name(node, "step"), "step", "the run folder", node.where)
        step = m.Step(
            name, depend=_split(node.attrs.get("depend", "")), iterations=_int(node, "iterations", 1),
            cycles=_int(node, "cycles", 1), procs=_int(node, "procs", 1), shared=node.attrs.get("shared", "").strip(),
            suffix=node.attrs.get("suffix", "").strip(), active=node.attrs.get("active", "true").strip(),
            export=_bool(node, "export", False), max_async=node.attrs.get("max_async", "0").strip() or "0",
            work_dir=node.attrs.get("work_dir", "").strip(), do_log_file=node.attrs.get("do_log_file", "").strip(),
            where=node.where, submit=_bool(node, "submit", False))
        if node.attrs.get("timeout", "").strip():
            step.timeout = parse_duration(node.attrs["timeout"], f"step '{name}': timeout", node.where)
        if "copies" in node.attrs:
            step.copies = parse_copies(node.attrs["copies"], node.where)
        for attr in ("iterations", "cycles", "procs"):
            if getattr(step, attr) < 1:
                raise SpecError(f"step '{name}': {attr}={getattr(step, attr)} is less than 1", node.where,
                                hint=f"{attr} must be at least 1")
        for child in node.children:
            if child.tag == "use":
                step.uses.append(self.use(child, bench))
            else:
                step.dos.append(m.Do(
                    child.text.strip(), done_file=child.attrs.get("done_file", "").strip(),
                    error_file=child.attrs.get("error_file", "").strip(),
                    break_file=child.attrs.get("break_file", "").strip(),
                    stdout=child.attrs.get("stdout", "").strip(), stderr=child.attrs.get("stderr", "").strip(),
                    shared=_bool(child, "shared", False), active=child.attrs.get("active", "true").strip(),
                    work_dir=child.attrs.get("work_dir", "").strip(), where=child.where))
        return step

    def analyser(self, node: Node, bench: m.Benchmark) -> m.Analyser:
        _only(node, {"use", "analyse"})
        analyser = m.Analyser(_name(node, "analyser"), reduce=_bool(node, "reduce", True), where=node.where)
        for child in node.children:
            if child.tag == "use":
                analyser.uses += self.use(child, bench).names
                continue
            _only(child, {"file"})
            step = child.attrs.get("step", "").strip()
            if not step:
                raise SpecError("<analyse> needs step=", child.where, hint='write <analyse step="run">')
            analyse = m.Analyse(step, where=child.where)
            for file_node in child.children:
                uses = _split(file_node.attrs.get("use", ""))
                for path in _split(file_node.text):
                    analyse.files.append(m.AnalyseFile(path, uses, file_node.where))
            analyser.analyses.append(analyse)
        return analyser

    def result(self, node: Node, bench: m.Benchmark) -> m.Result:
        _only(node, {"use", "table", "database", "syslog"})
        result = m.Result(result_dir=node.attrs.get("result_dir", "").strip(), where=node.where)
        for child in node.children:
            if child.tag == "use":
                result.uses += _split(child.text)
                continue
            name = _file_name(_name(child, child.tag), child.tag, "the result folder", child.where)
            table = m.Table(name, output=child.tag, where=child.where,
                            style=child.attrs.get("style", "csv").strip(),
                            sort=_split(child.attrs.get("sort", "")),
                            separator=child.attrs.get("separator", ","),
                            transpose=_bool(child, "transpose", False),
                            filter=child.attrs.get("filter", "").strip(),
                            primekeys=_split(child.attrs.get("primekeys", "")),
                            db_file=child.attrs.get("file", "").strip())
            if table.output == "table" and table.style not in ("csv", "pretty", "aligned", "markdown", "json"):
                raise SpecError(f"style={table.style!r} is not a table style", child.where,
                                hint="expected csv, pretty, aligned, markdown or json")
            for col in child.children:
                if col.tag not in ("column", "key"):
                    raise SpecError(f"unknown element <{col.tag}> in <{child.tag}>", col.where,
                                    hint="expected <column> (or <key> in a database)")
                table.columns.append(m.Column(col.text.strip(), col.attrs.get("title", "").strip(),
                                              col.attrs.get("format", "").strip(), col.attrs.get("colw", "").strip(),
                                              col.where, primekey=_bool(col, "primekey", False)))
            result.tables.append(table)
        return result
