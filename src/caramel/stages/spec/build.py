"""Build a benchmark (its steps, analysers and results) from a (tag-filtered, include-expanded) Node
tree; its sets are built by spec.sets, its attributes read by spec.attributes.
"""

from __future__ import annotations

import os
import re

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec import call as calls
from caramel.stages.spec import model as m
from caramel.stages.spec.attributes import (
    boolean,
    file_name,
    name_of,
    only_children,
    split_list,
    whole_number,
)
from caramel.stages.spec.estimator import parse_estimator
from caramel.stages.spec.grammar import children_of, choices
from caramel.stages.spec.limits import (
    parse_array,
    parse_copies,
    parse_copies_aggregate,
    parse_duration,
    parse_repeat,
)
from caramel.stages.spec.meta import find_meta_node, read_meta
from caramel.stages.spec.sanity import from_comment, read_sanity
from caramel.stages.spec.sets import AnySet, SetBuilder
from caramel.stages.spec.tree import Node


class Builder(SetBuilder):
    """Builds benchmarks; the sets they use come from SetBuilder."""

    imports = True  # False (--no-eval): a call: step's function is found by name, never imported

    def benchmark(
        self, node: Node, global_sets: dict[str, dict[str, AnySet]], path: str
    ) -> m.Benchmark:
        only_children(node, children_of("benchmark"))
        name = name_of(node, "benchmark")
        outpath = self._outpath(node, name)
        ref = node.attrs.get("file_path_ref", ".").strip() or "."
        home = os.path.normpath(
            os.path.join(self.home, os.path.expandvars(os.path.expanduser(ref)))
        )
        local = self.sets(node, home)
        bench = m.Benchmark(
            name,
            outpath=outpath,
            comment=_comment(node),
            file=path,
            home=home,
            tags=set(self.tags),
            where=node.where,
            meta=read_meta(find_meta_node(node)),
            repeat=parse_repeat(
                node.attrs.get("repeat", "1"),
                Location(node.where.file, node.attr_lines.get("repeat", node.where.line)),
            ),
        )
        _merge_sets(bench, global_sets, local)
        figures = self._add_steps(node, bench)
        for child in node.findall("analyser") + node.findall("analyzer"):
            analyser = self.analyser(child, bench)
            bench.analysers[analyser.name] = analyser
        for child in node.findall("result"):
            bench.results.append(self.result(child, bench))
        self.comment_sanity(node, bench)
        calls.finish(bench, figures, imports=self.imports)
        return bench

    def _outpath(self, node: Node, name: str) -> str:
        """The benchmark's outpath, absolute (relative to the file's folder)."""
        outpath = node.attrs.get("outpath", "").strip()
        if not outpath:
            raise SpecError(
                f"benchmark '{name}' needs an outpath",
                node.where,
                hint='write outpath="bench_run" (YAML: outpath: bench_run)',
            )
        return os.path.normpath(
            os.path.join(self.home, os.path.expandvars(os.path.expanduser(outpath)))
        )

    def _add_steps(self, node: Node, bench: m.Benchmark) -> dict[str, list[m.Pattern]]:
        """The benchmark's steps, each defined once; returns the figures each step declares."""
        figures: dict[str, list[m.Pattern]] = {}
        for child in node.findall("step"):
            step = self.step(child, bench, figures)
            if step.name in bench.steps:
                raise SpecError(
                    f"step '{step.name}' is defined twice",
                    child.where,
                    hint=f"first definition at {bench.steps[step.name].where}; "
                    "give them tags that exclude each other",
                )
            bench.steps[step.name] = step
        return figures

    @staticmethod
    def comment_sanity(node: Node, bench: m.Benchmark) -> None:
        """`<sanity step=... | analyser=...>` inside `<comment>` (spec/sanity.py): added to its
        owner."""
        for owner, name, child in from_comment(node):
            pool = bench.steps if owner == "step" else bench.analysers
            if name not in pool:
                raise SpecError(
                    f"<sanity {owner}={name!r}> names no {owner} of benchmark '{bench.name}'",
                    child.where,
                    hint=did_you_mean(name, pool) or f"{owner}s: " + (", ".join(pool) or "none"),
                )
            pool[name].sanity.append(read_sanity(child))

    def use(self, node: Node, bench: m.Benchmark) -> m.Use:
        names = split_list(node.text)
        source = node.attrs.get("from", "").strip()
        if not names:
            raise SpecError("<use> names no set", node.where, hint="write <use>setname</use>")
        if not source:
            return m.Use(names, node.where)
        return self._use_from(names, source, bench, node.where)

    def _use_from(
        self, names: list[str], source: str, bench: m.Benchmark, where: Location
    ) -> m.Use:
        """A use of sets `from="file:a:b,..."`. JUBE: `from="file:a:b"` loads sets a and b; the use
        names one of them, maybe through a parameter (`set$index`), so each is registered as
        `<name>@<file>`; the use names the sets of the first file."""
        for set_name in names:
            for file_part in source.split(","):
                self._load_from(file_part, set_name, bench, where)
        first_file = source.split(",")[0].split(":")[0].strip() or bench.file
        return m.Use([f"{set_name}@{first_file}" for set_name in names], where)

    def _load_from(
        self, file_part: str, set_name: str, bench: m.Benchmark, where: Location
    ) -> None:
        """Registers the sets a from= part `file:a:b` names (none named: `set_name`), but those
        named through a parameter."""
        filename, searches = _named_sets(file_part, set_name)
        filename = filename or bench.file
        for search in searches:
            if "$" in search:
                continue
            kind = self.find_set_kind(filename, search, where)
            pool = getattr(bench, kind + "s")
            internal = f"{search}@{filename}"
            if internal not in pool:
                pool[internal] = self.extern_set(kind, filename, search, where, search)

    @staticmethod
    def shared_name(node: Node, step: str) -> str:
        """A step's shared= names a folder in the run folder: no separator, no `..` (after
        substitution too: engine.workdir checks the final name)."""
        shared = node.attrs.get("shared", "").strip()
        return (
            file_name(shared, f"shared (of step '{step}')", "the run folder", node.where)
            if shared
            else ""
        )

    def step(self, node: Node, bench: m.Benchmark, figures: dict[str, list[m.Pattern]]) -> m.Step:
        only_children(node, children_of("step"))
        name = file_name(name_of(node, "step"), "step", "the run folder", node.where)
        step = m.Step(
            name,
            depend=split_list(node.attrs.get("depend", "")),
            iterations=whole_number(node, "iterations", 1),
            cycles=whole_number(node, "cycles", 1),
            procs=whole_number(node, "procs", 1),
            shared=self.shared_name(node, name),
            suffix=node.attrs.get("suffix", "").strip(),
            active=node.attrs.get("active", "true").strip(),
            export=boolean(node, "export", False),
            max_async=node.attrs.get("max_async", "0").strip() or "0",
            work_dir=node.attrs.get("work_dir", "").strip(),
            do_log_file=node.attrs.get("do_log_file", "").strip(),
            where=node.where,
            submit=boolean(node, "submit", False),
        )
        if node.attrs.get("timeout", "").strip():
            step.timeout = parse_duration(
                node.attrs["timeout"], f"step '{name}': timeout", node.where
            )
        _read_step_options(step, node)
        _check_counts(step, node)
        for child in node.children:
            self._read_step_child(child, step, bench, figures)
        _check_figures(step, figures)
        return step

    def _read_step_child(
        self, child: Node, step: m.Step, bench: m.Benchmark, figures: dict[str, list[m.Pattern]]
    ) -> None:
        """One child of a step: a use, sanity, call, figure or do."""
        if child.tag == "use":
            step.uses.append(self.use(child, bench))
        elif child.tag == "sanity":
            step.sanity.append(read_sanity(child))
        elif child.tag == "call":
            calls.read_call(child, step)
        elif child.tag == "figure":
            figures.setdefault(step.name, []).append(calls.read_figure(child, step))
        else:
            step.dos.append(_read_do(child))

    def analyser(self, node: Node, bench: m.Benchmark) -> m.Analyser:
        only_children(node, children_of("analyser"))
        analyser = m.Analyser(
            name_of(node, "analyser"), reduce=boolean(node, "reduce", True), where=node.where
        )
        for child in node.children:
            if child.tag == "use":
                analyser.uses += self.use(child, bench).names
            elif child.tag == "sanity":
                analyser.sanity.append(read_sanity(child))
            else:
                analyser.analyses.append(_analyse(child))
        return analyser

    def result(self, node: Node, bench: m.Benchmark) -> m.Result:
        only_children(node, children_of("result"))
        result = m.Result(result_dir=node.attrs.get("result_dir", "").strip(), where=node.where)
        for child in node.children:
            if child.tag == "use":
                result.uses += split_list(child.text)
            else:
                result.tables.append(_table(child))
        return result


def _comment(node: Node) -> str:
    """The benchmark's `<comment>`, its white space runs made single spaces."""
    comment_node = node.find("comment")
    return re.sub(r"\s+", " ", comment_node.text if comment_node is not None else "").strip()


def _merge_sets(
    bench: m.Benchmark,
    global_sets: dict[str, dict[str, AnySet]],
    local: dict[str, dict[str, AnySet]],
) -> None:
    """The benchmark's sets: the global ones and its own; a name defined in both is an error."""
    for kind, attr in (
        ("parameterset", "parametersets"),
        ("substituteset", "substitutesets"),
        ("fileset", "filesets"),
        ("patternset", "patternsets"),
    ):
        merged = dict(global_sets[kind])
        for set_name, built in local[kind].items():
            if set_name in merged:
                raise SpecError(
                    f"{kind} '{set_name}' is defined both globally and in benchmark '{bench.name}'",
                    built.where,
                )
            merged[set_name] = built
        setattr(bench, attr, merged)


def _named_sets(file_part: str, set_name: str) -> tuple[str, list[str]]:
    """A from= part `file:a:b`: its file and the sets it names (none named: `set_name`)."""
    filename, *names = [p.strip() for p in file_part.split(":")]
    return filename, [n for n in names if n] or [set_name]


def _read_step_options(step: m.Step, node: Node) -> None:
    """A step's optional `copies`, `copies_aggregate`, `array` and `estimator`."""
    if "copies" in node.attrs:
        step.copies = parse_copies(node.attrs["copies"], node.where)
    if "copies_aggregate" in node.attrs:
        step.copies_aggregate = parse_copies_aggregate(node.attrs["copies_aggregate"], node.where)
    if "array" in node.attrs:
        step.array = parse_array(node.attrs["array"], _is_batched(step, node), node.where)
    if "estimator" in node.attrs:
        step.estimator = parse_estimator(node.attrs["estimator"], node.where).text


def _is_batched(step: m.Step, node: Node) -> bool:
    """A submit: step, or a call: step (on SLURM one batch of submitit: array: N caps its tasks at
    once, engine.call_batch)."""
    return step.submit or any(child.tag == "call" for child in node.children)


def _check_counts(step: m.Step, node: Node) -> None:
    for attr in ("iterations", "cycles", "procs"):
        if getattr(step, attr) < 1:
            raise SpecError(
                f"step '{step.name}': {attr}={getattr(step, attr)} is less than 1",
                node.where,
                hint=f"{attr} must be at least 1",
            )


def _read_do(child: Node) -> m.Do:
    """A `<do>`: one shell command, the element's text."""
    if child.children:  # XML: `<do>a <b> c</do>` would run "a " only
        raise SpecError(
            f"<do> holds an element <{child.children[0].tag}>, not only text",
            child.children[0].where,
            hint="a do is one shell command: write < as &lt; "
            "and & as &amp;, or put the command in a CDATA section",
        )
    return m.Do(
        child.text.strip(),
        done_file=child.attrs.get("done_file", "").strip(),
        error_file=child.attrs.get("error_file", "").strip(),
        break_file=child.attrs.get("break_file", "").strip(),
        stdout=child.attrs.get("stdout", "").strip(),
        stderr=child.attrs.get("stderr", "").strip(),
        shared=boolean(child, "shared", False),
        active=child.attrs.get("active", "true").strip(),
        work_dir=child.attrs.get("work_dir", "").strip(),
        where=child.where,
    )


def _check_figures(step: m.Step, figures: dict[str, list[m.Pattern]]) -> None:
    """A step that declares figures calls a function."""
    if figures.get(step.name) and not step.call:
        raise SpecError(
            f"step '{step.name}' declares figures but calls no function",
            figures[step.name][0].where,
            hint="<figure> belongs to a step with call: package.module:function",
        )


def _table(child: Node) -> m.Table:
    """A `<table>` or `<database>` of a result, with its columns."""
    name = file_name(name_of(child, child.tag), child.tag, "the result folder", child.where)
    table = m.Table(
        name,
        output=m.TableOutput(child.tag),
        where=child.where,
        style=child.attrs.get("style", "csv").strip(),
        sort=split_list(child.attrs.get("sort", "")),
        separator=child.attrs.get("separator", ","),
        transpose=boolean(child, "transpose", False),
        filter=child.attrs.get("filter", "").strip(),
        primekeys=split_list(child.attrs.get("primekeys", "")),
        db_file=child.attrs.get("file", "").strip(),
    )
    _check_style(table, child)
    table.columns += [_column(col, child) for col in child.children]
    return table


def _check_style(table: m.Table, child: Node) -> None:
    styles = choices("table", "style")
    if table.output == "table" and table.style not in styles:
        raise SpecError(
            f"style={table.style!r} is not a table style",
            child.where,
            hint=did_you_mean(table.style, styles)
            or f"expected {', '.join(styles[:-1])} or {styles[-1]}",
        )


def _column(col: Node, child: Node) -> m.Column:
    """A `<column>` (or a database's `<key>`)."""
    if col.tag not in ("column", "key"):
        raise SpecError(
            f"unknown element <{col.tag}> in <{child.tag}>",
            col.where,
            hint="expected <column> (or <key> in a database)",
        )
    return m.Column(
        col.text.strip(),
        col.attrs.get("title", "").strip(),
        col.attrs.get("format", "").strip(),
        col.attrs.get("colw", "").strip(),
        col.where,
        primekey=boolean(col, "primekey", False),
    )


def _analyse(child: Node) -> m.Analyse:
    """An `<analyse step=...>`: the files of the step's workpackages it reads, each with the
    pattern sets it uses."""
    only_children(child, children_of("analyse"))
    step = child.attrs.get("step", "").strip()
    if not step:
        raise SpecError("<analyse> needs step=", child.where, hint='write <analyse step="run">')
    analyse = m.Analyse(step, where=child.where)
    for file_node in child.children:
        uses = split_list(file_node.attrs.get("use", ""))
        analyse.files += [
            m.AnalyseFile(path, uses, file_node.where) for path in split_list(file_node.text)
        ]
    return analyse
