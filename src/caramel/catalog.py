"""The benchmarks a user can run by name: shipped ones, `$CARAMEL_BENCHMARKS_PATH` and given folders.

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
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from caramel.errors import CaramelError, did_you_mean
from caramel.resources import shipped
from caramel.spec.meta import find_meta_node, read_meta
from caramel.spec.model import BenchmarkMeta
from caramel.spec.sources import read_tree

SUFFIXES = (".yaml", ".yml", ".xml")


class CatalogError(CaramelError):
    """An unknown benchmark name or a tag that selects nothing."""


@dataclass(frozen=True)
class BenchmarkEntry:
    name: str
    path: str
    origin: str  # "shipped", "user" ($CARAMEL_BENCHMARKS_PATH) or the folder given
    meta: BenchmarkMeta = BenchmarkMeta()
    error: str = ""  # why the file could not be read (it is listed, never run by a tag selection)

    @property
    def tags(self) -> tuple[str, ...]:
        """MAD's rule: a benchmark's name is a tag of its own."""
        return (self.name,) + tuple(t for t in self.meta.tags if t != self.name)


def search_folders(extra_dirs: Iterable[str] = ()) -> list[tuple[Path, str]]:
    """(folder, origin) in search order."""
    folders = [(Path(d), str(d)) for d in extra_dirs]
    folders += [(Path(p), "user") for p in os.environ.get("CARAMEL_BENCHMARKS_PATH", "").split(os.pathsep) if p]
    return folders + [(shipped("benchmarks"), "shipped")]


def find_benchmarks(extra_dirs: Iterable[str] = ()) -> list[BenchmarkEntry]:
    """Every benchmark file of the search folders (the first of each name), sorted by name."""
    entries: dict[str, BenchmarkEntry] = {}
    for folder, origin in search_folders(extra_dirs):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in SUFFIXES or not path.is_file() or path.stem in entries:
                continue
            entry = read_entry(path, origin)
            if entry is not None:
                entries[path.stem] = entry
    return sorted(entries.values(), key=lambda e: e.name)


def read_entry(path: Path, origin: str) -> BenchmarkEntry | None:
    """The entry of one file, or None when it is no benchmark file (no <jube>, no benchmark in it)."""
    try:
        tree = read_tree(str(path))
    except CaramelError as exc:
        return BenchmarkEntry(path.stem, str(path), origin, error=str(exc))
    benchmarks = list(tree.iter("benchmark")) if tree.tag == "jube" else []
    if not benchmarks:
        return None
    try:
        meta = read_meta(find_meta_node(benchmarks[0]))
    except CaramelError as exc:
        return BenchmarkEntry(path.stem, str(path), origin, error=str(exc))
    if not meta.description:
        comment = benchmarks[0].find("comment")
        text = " ".join((comment.text if comment is not None else "").split())
        meta = dataclasses.replace(meta, description=text)
    return BenchmarkEntry(path.stem, str(path), origin, meta)


def select_by_tags(entries: Sequence[BenchmarkEntry], tags: Iterable[str]) -> list[BenchmarkEntry]:
    """The entries carrying any of `tags` (names count as tags); nothing selected is an error."""
    wanted = [t for t in tags if t]
    chosen = [e for e in entries if not e.error and any(t in e.tags for t in wanted)]
    if not chosen:
        known = sorted({t for e in entries for t in e.tags})
        hints = [h for h in (did_you_mean(t, known) for t in wanted) if h]
        raise CatalogError(f"no benchmark has the tag{'s' if len(wanted) > 1 else ''} {', '.join(wanted) or '(none)'}",
                           hint="; ".join(hints + ["existing tags: " + (", ".join(known) or "none")]))
    return chosen


def resolve_benchmark(name_or_path: str, extra_dirs: Iterable[str] = ()) -> str:
    """A file that exists is that file; a name is looked up in the search folders (an unknown name lists
    the known ones); a path that does not exist is returned for the loader to say so."""
    if os.path.isfile(name_or_path):
        return name_or_path
    entries = find_benchmarks(extra_dirs)
    for entry in entries:
        if entry.name == name_or_path:
            return entry.path
    if os.sep in name_or_path or name_or_path.endswith(SUFFIXES):
        return name_or_path  # meant as a path: the loader says it is not there
    names = [e.name for e in entries]
    raise CatalogError(f"no benchmark file or benchmark named '{name_or_path}'",
                       hint="; ".join(h for h in (did_you_mean(name_or_path, names),
                                                  "known benchmarks: " + (", ".join(names) or "none")) if h))
