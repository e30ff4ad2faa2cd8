"""Load a benchmark file into the model: the one entry point of the `spec` stage.

    benchmarks = load(path, tags={"800M", "A100"}, include_path=["platform/"])

Steps, in JUBE's order: read the tree, add `<selection>` tags, drop elements whose tags do not
hold, resolve `<include>`, check `check_tags`, then build each `<benchmark>` with the global
sets, `init_with` and `use from=` resolved.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec import build
from caramel.stages.spec.grammar import children_of
from caramel.stages.spec.keycheck import check_keys
from caramel.stages.spec.mad import is_models_json, read_models_json
from caramel.stages.spec.model import Benchmark
from caramel.stages.spec.sources import (
    IncludePath,
    env_include_path,
    expand_includes,
    read_tree,
    remove_inactive,
    templates_dir,
)
from caramel.stages.spec.tags import TagSyntaxError, tag_matches
from caramel.stages.spec.tagscan import check_given_tags, file_tags
from caramel.stages.spec.tree import Node

TOP_LEVEL = children_of("jube")


def load(
    path: str,
    tags: set[str] | None = None,
    include_path: list[str] | None = None,
    only: list[str] | None = None,
    strict: bool = False,
    no_eval: bool = False,
    system_tags: Collection[str] | None = None,
) -> list[Benchmark]:
    """All benchmarks of `path` selected by `<selection>` (and `only`), built for `tags`. An
    attribute the grammar does not know is a warning (JUBE ignores it), an error when `strict`.
    `no_eval`: no module a `call:` names is imported (spec.call_static). `system_tags`: the names of
    the system files; given, a tag of `tags` that neither they nor the file know is an error
    (spec.tagscan), before `<check_tags>` is (its "needs tags" hides the typo)."""
    path = os.path.abspath(path)
    tags = set(tags or ())
    given = sorted(tags)  # before <selection> adds its own
    home = os.path.dirname(path)
    cli_paths = _cli_paths(include_path)
    raw = _read_raw(path, only, cli_paths)
    selection = _selection(raw, tags, only)
    tree = raw.copy()
    remove_inactive(tree, tags)
    include = _include_path(tree, cli_paths, home)
    expand_includes(tree, include, tags)
    if not is_models_json(
        path
    ):  # the whole file (inactive elements too), then what includes brought
        check_keys([raw, tree], strict)
    if system_tags is not None:
        check_given_tags(given, file_tags(raw, include), system_tags, Location(path))
    _check_required_tags(tree, tags)
    _check_top_level(tree)
    builder = build.Builder(include, tags, home)
    builder.imports = not no_eval
    return _built(builder, tree, path, selection)


def _cli_paths(include_path: list[str] | None) -> list[str]:
    """The folders --include-path names, absolute."""
    return [os.path.abspath(p) for p in include_path or []]


def _read_raw(path: str, only: list[str] | None, cli_paths: list[str]) -> Node:
    """The file's tree as written: a benchmark file's, or MAD's model zoo's (its entries that
    `only` names, as benchmarks)."""
    if not os.path.isfile(path):
        raise SpecError(
            "benchmark file not found", Location(path), hint="check the path given to bench"
        )
    if is_models_json(path):
        raw = read_models_json(path, only)
    else:
        raw = read_tree(path, cli_paths + env_include_path() + [os.path.dirname(path)])
    if raw.tag != "jube":
        raise SpecError(
            f"the root element must be <jube>, found <{raw.tag}>",
            raw.where,
            hint="put the benchmark inside <jube> ... </jube>",
        )
    return raw


def _check_top_level(tree: Node) -> None:
    for child in tree.children:
        if child.tag not in TOP_LEVEL:
            hint = did_you_mean(child.tag, TOP_LEVEL) or "expected one of: " + ", ".join(
                sorted(TOP_LEVEL)
            )
            raise SpecError(
                f"unknown element <{child.tag}> at the top level", child.where, hint=hint
            )


def _built(builder: build.Builder, tree: Node, path: str, selection: _Selection) -> list[Benchmark]:
    """The benchmarks of the tree that the selection keeps, built with the global sets."""
    global_sets = builder.sets(tree)
    nodes = tree.findall("benchmark")
    if not nodes:
        raise SpecError(
            "no benchmark in this file",
            tree.where,
            hint="a file needs <benchmark name=... outpath=...> (YAML: name:, outpath:, step:)",
        )
    benchmarks = [builder.benchmark(node, global_sets, path) for node in nodes]
    return [benchmark for benchmark in benchmarks if selection.keeps(benchmark.name)]


def _include_path(tree: Node, cli_paths: list[str], home: str) -> IncludePath:
    """Where the files a benchmark file names are searched: --include-path, its `<include-path>`s,
    $JUBE_INCLUDE_PATH, its own folder, then JUBE's platform files."""
    folders = list(cli_paths)
    for inc in tree.findall("include-path"):
        texts = [inc.text] + [p.text for p in inc.findall("path")]
        for text in texts:
            if text and text.strip():
                folders.append(
                    os.path.join(home, os.path.expandvars(os.path.expanduser(text.strip())))
                )
    folders += env_include_path() + [home, str(templates_dir() / "platform")]
    return IncludePath(folders)


def known_tags(path: str, include_path: list[str] | None = None) -> set[str]:
    """The tags the benchmark file at `path` and the files it reads mention, whatever tags are given
    (spec.tagscan): what a campaign's --tag may name. A MAD models.json mentions none."""
    path = os.path.abspath(path)
    if is_models_json(path):
        return set()
    cli_paths = _cli_paths(include_path)
    raw = read_tree(path, cli_paths + env_include_path() + [os.path.dirname(path)])
    return file_tags(raw, _include_path(raw, cli_paths, os.path.dirname(path)))


def load_one(
    path: str,
    tags: set[str] | None = None,
    include_path: list[str] | None = None,
    name: str | None = None,
    strict: bool = False,
) -> Benchmark:
    """The single benchmark of a file (or the one named `name`)."""
    benchmarks = load(path, tags, include_path, only=[name] if name else None, strict=strict)
    if not benchmarks:
        raise SpecError(
            f"no benchmark named '{name}'" if name else "no benchmark selected", Location(path)
        )
    return benchmarks[0]


@dataclass
class _Selection:
    """The benchmark names `<selection>` keeps (`<only>`) and drops (`<not>`), and those `load`'s
    `only` keeps (None: all)."""

    only: list[str] | None
    only_names: set[str] = field(default_factory=set)
    not_names: set[str] = field(default_factory=set)

    def keeps(self, name: str) -> bool:
        return (
            (not self.only_names or name in self.only_names)
            and name not in self.not_names
            and (not self.only or name in self.only)
        )


def _selection(raw: Node, tags: set[str], only: list[str] | None) -> _Selection:
    """The benchmark names `<selection>` keeps and drops; its `<tag>`s are added to `tags` before
    anything is filtered (JUBE does the same)."""
    selection = _Selection(only)
    for node in raw.findall("selection"):
        if _holds(node, tags):
            for item in node.children:
                _select(item, tags, selection)
    return selection


def _select(item: Node, tags: set[str], selection: _Selection) -> None:
    """One `<tag>`, `<only>` or `<not>` of a `<selection>`: its comma-separated names added."""
    names = {"tag": tags, "only": selection.only_names, "not": selection.not_names}
    if item.tag not in names:
        raise SpecError(
            f"unknown element <{item.tag}> in <selection>",
            item.where,
            hint=did_you_mean(item.tag, children_of("selection"))
            or "expected <only>, <not> or <tag>",
        )
    names[item.tag].update(v.strip() for v in item.text.split(",") if v.strip())


def _holds(node: Node, tags: set[str]) -> bool:
    try:
        return tag_matches(node.attrs.get("tag"), tags)
    except TagSyntaxError as exc:
        raise SpecError(f"cannot read tag expression: {exc}", node.where) from None


def _check_required_tags(tree: Node, tags: set[str]) -> None:
    """`<check_tags>` (top level or inside `<tags>`) must hold for the tags given."""
    checks = list(tree.findall("check_tags"))
    for group in tree.findall("tags"):
        checks += group.findall("check_tags")
    for check in checks:
        expr = check.text.strip()
        try:
            ok = tag_matches(expr, tags)
        except TagSyntaxError as exc:
            raise SpecError(f"cannot read <check_tags> {expr!r}: {exc}", check.where) from None
        if not ok:
            raise SpecError(
                f"this benchmark needs tags matching {expr!r}, given: "
                f"{', '.join(sorted(tags)) or 'none'}",
                check.where,
                hint=f"add them with --tag, e.g. --tag {expr.split('|')[0].strip('!()+ ')}",
            )
