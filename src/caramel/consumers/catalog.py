"""The benchmarks a user can run by name: shipped ones, `$CARAMEL_BENCHMARKS_PATH` and given
folders.

    entries = find_benchmarks(["my_benchmarks/"])
    chosen = select_by_tags(entries, ["llm", "resnet50"])      # MAD's rule: any tag matches
    path = resolve_benchmark("llm")                             # or a path that exists

A benchmark's name is its file's stem (`benchmarks/llm.yaml` is `llm`): what the user types and
what a folder listing shows, unique within a folder (a file's `<benchmark name=...>` is often
longer, e.g. `llm_benchmark`). Folders are searched in order: given folders, then
`$CARAMEL_BENCHMARKS_PATH` (os.pathsep-separated), then the shipped `benchmarks/`; the first file
of a name wins. A file counts when it reads as a JUBE file with a benchmark in it; platform files
and system files do not. Description and tags come from the `meta` block (docs/file-format.md);
without a meta description the benchmark's comment is shown.

A folder's `models.json` (MAD's model zoo, caramel.stages.spec.mad), with each
`scripts/DIR/models.json` beside it as madengine finds them (named `DIR/NAME`), gives one entry per
model, named as the model, with its path the JSON file and `benchmark` the model's name (run with
`--only-bench NAME`). A file or model that cannot be read is an entry with its `error`: listed,
and reported as a failed member by a suite whose tags it carries (its tags, if readable, or its
name).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from caramel.errors import CaramelError, SpecError, did_you_mean
from caramel.resources import shipped
from caramel.settings import current
from caramel.stages.spec.mad import FILE_NAME as MODELS_JSON
from caramel.stages.spec.mad import EntryError, MadEntry, models_json_files, read_entries
from caramel.stages.spec.meta import find_meta_node, read_meta
from caramel.stages.spec.model import BenchmarkMeta
from caramel.stages.spec.sources import read_tree
from caramel.stages.spec.tree import Node

SUFFIXES = (".yaml", ".yml", ".xml")


class CatalogError(CaramelError):
    """An unknown benchmark name or a tag that selects nothing."""


@dataclass(frozen=True)
class BenchmarkEntry:
    name: str
    path: str
    origin: str  # "shipped", "user" ($CARAMEL_BENCHMARKS_PATH) or the folder given
    meta: BenchmarkMeta = BenchmarkMeta()
    error: str = (
        ""  # why the file could not be read (listed; a suite with its tags reports it as failed)
    )
    benchmark: str = (
        ""  # the benchmark of the file to run (a models.json entry), "" for the file's own
    )
    tags_known: bool = True  # False: the file could not be read far enough to know its tags

    @property
    def tags(self) -> tuple[str, ...]:
        """MAD's rule: a benchmark's name is a tag of its own."""
        return (self.name,) + tuple(t for t in self.meta.tags if t != self.name)


def search_folders(extra_dirs: Iterable[str] = ()) -> list[tuple[Path, str]]:
    """(folder, origin) in search order."""
    folders = [(Path(d), str(d)) for d in extra_dirs]
    folders += [(Path(p), "user") for p in current().benchmarks_path]
    return folders + [(shipped("benchmarks"), "shipped")]


def find_benchmarks(extra_dirs: Iterable[str] = ()) -> list[BenchmarkEntry]:
    """Every benchmark file of the search folders (the first of each name), sorted by name."""
    entries: dict[str, BenchmarkEntry] = {}
    for folder, path, origin in _search_files(extra_dirs):
        # a benchmark file of a name already found is not read
        for entry in _file_entries(folder, path, origin, lambda stem: stem not in entries):
            entries.setdefault(entry.name, entry)
    return sorted(entries.values(), key=lambda e: e.name)


def _first_named(name: str, extra_dirs: Iterable[str] = ()) -> BenchmarkEntry | None:
    """The entry `find_benchmarks` would list under `name`, found reading only the files that can
    carry it (`NAME.yaml|yml|xml`, a models.json), in its order: `bench run llm` reads one benchmark
    file, not every shipped one (reading them all would parse every file and import lxml for the XML
    ones)."""
    for folder, path, origin in _search_files(extra_dirs):
        entries = _file_entries(folder, path, origin, lambda stem: stem == name)
        found = next((e for e in entries if e.name == name), None)
        if found is not None:
            return found
    return None


def _search_files(extra_dirs: Iterable[str]) -> Iterator[tuple[Path, Path, str]]:
    """(folder, file, origin) of each file of the search folders that exist, in search order; a
    folder is listed only when the search reaches it."""
    for folder, origin in search_folders(extra_dirs):
        if folder.is_dir():
            yield from ((folder, path, origin) for path in sorted(folder.iterdir()))


def _file_entries(
    folder: Path, path: Path, origin: str, wanted: Callable[[str], bool]
) -> list[BenchmarkEntry]:
    """The entries a file of a search folder gives: a models.json its folder's models (and those of
    scripts/DIR/models.json); a benchmark file whose name is `wanted` its own; any other none."""
    if path.name == MODELS_JSON and path.is_file():
        return mad_folder_entries(folder, origin)
    if not _is_benchmark_file(path, wanted):
        return []
    read = read_entry(path, origin)
    return [read] if read is not None else []


def _is_benchmark_file(path: Path, wanted: Callable[[str], bool]) -> bool:
    """Whether `path` is a file with a benchmark file's suffix whose name (stem) is `wanted`."""
    return path.suffix in SUFFIXES and wanted(path.stem) and path.is_file()


def read_entry(path: Path, origin: str) -> BenchmarkEntry | None:
    """The entry of one file, or None when it is no benchmark file (no <jube>, no benchmark in
    it)."""
    try:
        tree = read_tree(str(path))
    except CaramelError as exc:
        return BenchmarkEntry(path.stem, str(path), origin, error=str(exc), tags_known=False)
    benchmarks = list(tree.iter("benchmark")) if tree.tag == "jube" else []
    if not benchmarks:
        return None
    try:
        meta = read_meta(find_meta_node(benchmarks[0]))
    except CaramelError as exc:
        return _unreadable_meta(path, origin, benchmarks[0], exc)
    return BenchmarkEntry(path.stem, str(path), origin, _described(meta, benchmarks[0]))


def _unreadable_meta(
    path: Path, origin: str, benchmark: Node, error: CaramelError
) -> BenchmarkEntry:
    """The entry of a file whose meta block is wrong: its error, and its tags where they can still
    be read."""
    tags = _raw_tags(benchmark)
    return BenchmarkEntry(
        path.stem,
        str(path),
        origin,
        BenchmarkMeta(tags=tags or ()),
        error=str(error),
        tags_known=tags is not None,
    )


def _described(meta: BenchmarkMeta, benchmark: Node) -> BenchmarkMeta:
    """`meta`, described by the benchmark's comment (its whitespace collapsed) when it has no
    description of its own."""
    if meta.description:
        return meta
    comment = benchmark.find("comment")
    text = " ".join((comment.text if comment is not None else "").split())
    return dataclasses.replace(meta, description=text)


def _raw_tags(benchmark: Node) -> tuple[str, ...] | None:
    """The tags a meta block names, read even when another of its keys is wrong; None when
    unknowable."""
    try:
        node = find_meta_node(benchmark)
    except CaramelError:
        return None
    if node is None:
        return ()
    texts = [node.attrs.get("tags", "")] + [child.text for child in node.findall("tags")]
    return tuple(t.strip() for text in texts for t in text.split(",") if t.strip())


def mad_folder_entries(folder: Path, origin: str) -> list[BenchmarkEntry]:
    """The entries of a MAD folder: its models.json and each scripts/DIR/models.json (DIR/NAME), as
    madengine discovers them (spec.mad.models_json_files)."""
    files = models_json_files(str(folder))
    return [e for path in files for e in models_json_entries(Path(path), origin)]


def models_json_entries(path: Path, origin: str) -> list[BenchmarkEntry]:
    """One entry per model of a MAD models.json; a bad model (or file) is an entry with its
    error."""
    try:
        found = read_entries(str(path))
    except CaramelError as exc:
        return [
            BenchmarkEntry(
                f"{path.parent.name}/{path.name}",
                str(path),
                origin,
                error=str(exc),
                tags_known=False,
            )
        ]
    return [
        _model_entry(path, origin, index, item)
        if isinstance(item, MadEntry)
        else _unreadable_model(path, origin, index, item)
        for index, item in enumerate(found)
    ]


def _model_entry(path: Path, origin: str, index: int, model: MadEntry) -> BenchmarkEntry:
    """The entry of the `index`th model of a models.json, run as `--only-bench NAME`."""
    meta = BenchmarkMeta(
        description=f"MAD model ({MODELS_JSON} entry {index})",
        tags=model.tags,
        owner=model.owner,
        precision=model.training_precision,
        url=model.url,
        time_limit=model.timeout,
        multiple_results=model.multiple_results or None,
        devices=int(model.n_gpus) if model.n_gpus not in ("-1", "0") else None,
    )
    return BenchmarkEntry(model.name, str(path), origin, meta, benchmark=model.name)


def _unreadable_model(path: Path, origin: str, index: int, error: SpecError) -> BenchmarkEntry:
    """The entry of a model that cannot be read: its error, and its name and tags where the error
    knows them (spec.mad.EntryError), else named by its place in the file."""
    name, tags = (
        (error.entry_name, error.entry_tags) if isinstance(error, EntryError) else ("", None)
    )
    name = name or f"{MODELS_JSON}[{index}]"
    return BenchmarkEntry(
        name,
        str(path),
        origin,
        BenchmarkMeta(tags=tags or ()),
        error=str(error),
        benchmark=name,
        tags_known=tags is not None,
    )


def select_by_tags(entries: Sequence[BenchmarkEntry], tags: Iterable[str]) -> list[BenchmarkEntry]:
    """The readable entries carrying any of `tags` (names count as tags). Nothing readable selected
    is an error that says so plainly: which unreadable files carry the tag (or might), else the tags
    that exist."""
    wanted = list(filter(None, tags))
    chosen = [e for e in entries if not e.error and _carries_any(e, wanted)]
    if chosen:
        return chosen
    raise _nothing_selected(entries, wanted)


def _nothing_selected(entries: Sequence[BenchmarkEntry], wanted: list[str]) -> CatalogError:
    """No readable entry has the tags asked for: the error says which unreadable entries carry
    them, else which tags exist."""
    carriers = [e for e in unreadable_members(entries, wanted) if e.tags_known]
    if carriers:
        return _unreadable_carriers(carriers, _asked(wanted))
    return _no_such_tag(entries, wanted)


def _carries_any(entry: BenchmarkEntry, wanted: list[str]) -> bool:
    return any(carries(entry, t) for t in wanted)


def _asked(wanted: list[str]) -> str:
    """The tags asked for as the errors name them: `tag llm`, `tags llm, gpt`, `tag (none)`."""
    plural = "s" if len(wanted) > 1 else ""
    return f"tag{plural} {', '.join(wanted) or '(none)'}"


def _unreadable_carriers(carriers: list[BenchmarkEntry], asked: str) -> CatalogError:
    """Nothing readable has the tags asked for, and `carriers`, which cannot be read, have them."""
    verb = "carries" if len(carriers) == 1 else "carry"
    return CatalogError(
        f"no readable benchmark has the {asked}: {_files(carriers)} {verb} it and could "
        "not be read",
        hint=" | ".join(f"{e.name}: {e.error.splitlines()[0]}" for e in carriers),
    )


def _no_such_tag(entries: Sequence[BenchmarkEntry], wanted: list[str]) -> CatalogError:
    """No entry has the tags asked for: the tags close to them, the files whose tags are unknown,
    and the tags that exist."""
    known = _readable_tags(entries)
    hints = [*filter(None, (did_you_mean(t, known) for t in wanted)), *_unknown_tags(entries)]
    return CatalogError(
        f"no benchmark has the {_asked(wanted)}",
        hint="; ".join(hints + ["existing tags: " + (", ".join(known) or "none")]),
    )


def _readable_tags(entries: Sequence[BenchmarkEntry]) -> list[str]:
    """The tags (names included) of the entries that could be read, sorted."""
    return sorted({t for e in entries if not e.error for t in e.tags})


def _unknown_tags(entries: Sequence[BenchmarkEntry]) -> list[str]:
    """A hint naming the entries that could not be read far enough to know their tags (none: no
    hint)."""
    unknown = [e for e in entries if e.error and not e.tags_known]
    return [f"{_files(unknown)} could not be read (their tags are unknown)"] if unknown else []


def unreadable_members(
    entries: Sequence[BenchmarkEntry], tags: Iterable[str]
) -> list[BenchmarkEntry]:
    """The entries that could not be read and that a selection by `tags` may have meant: those whose
    tags (or name) match, and those whose tags cannot be known. A suite reports each as a failed
    member."""
    wanted = [t for t in tags if t]
    return [e for e in entries if e.error and (not e.tags_known or _carries_any(e, wanted))]


def carries(entry: BenchmarkEntry, tag: str) -> bool:
    """The entry has the tag (its name is one), or the tag is madengine's scoped `DIR/TAG`: an entry
    of scripts/DIR/models.json (named DIR/NAME) carrying TAG, or any of them for `DIR/all`
    (utils/discover_models.py `DiscoverModels.select_models`)."""
    if tag in entry.tags:
        return True
    scope, _, inner = tag.partition("/")
    scoped = tag.count("/") == 1 and ":" not in tag and bool(scope) and bool(inner)
    return scoped and entry.name.startswith(scope + "/") and (inner == "all" or inner in entry.tags)


def _files(entries: Sequence[BenchmarkEntry]) -> str:
    return ", ".join(f"{e.name} ({e.path})" for e in entries)


def name_for(path: str, extra_dirs: Iterable[str] = ()) -> str:
    """How a user names the benchmark file `path` in a command: its name where `bench run NAME`
    finds this very file (a shipped one, wherever the wheel put it), else the path, relative to
    the current folder when below it."""
    stem = Path(path).stem
    found = _first_named(stem, extra_dirs)
    if found is not None and os.path.realpath(found.path) == os.path.realpath(path):
        return stem
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def resolve_benchmark(name_or_path: str, extra_dirs: Iterable[str] = ()) -> str:
    """A file that exists is that file; a name is looked up in the search folders (an unknown name
    lists the known ones); a path that does not exist is returned for the loader to say so."""
    if os.path.isfile(name_or_path):
        return name_or_path
    found = _first_named(name_or_path, extra_dirs)
    if found is not None:
        return found.path
    entries = find_benchmarks(extra_dirs)
    if os.sep in name_or_path or name_or_path.endswith(SUFFIXES):
        return name_or_path  # meant as a path: the loader says it is not there
    raise _unknown_benchmark(name_or_path, entries)


def _unknown_benchmark(name: str, entries: list[BenchmarkEntry]) -> CatalogError:
    """`name` names no benchmark: the close names, and every known one."""
    names = [e.name for e in entries]
    hints = (did_you_mean(name, names), "known benchmarks: " + (", ".join(names) or "none"))
    return CatalogError(
        f"no benchmark file or benchmark named '{name}'", hint="; ".join(h for h in hints if h)
    )
