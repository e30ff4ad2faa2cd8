"""Which tags a benchmark file knows, and the check that every tag given on the command line is one.

A tag is known when something can select by it: a tag expression anywhere in the file (`tag=`
attributes, inactive elements included, `<check_tags>`), a `<selection>` tag, a tag the file
declares in `<tags>` (JUBE's `<tag name="...">description</tag>`: a known optional tag, one the
file may read no other way), the same in every file it reads (`<include from=>`, `init_with=`,
`<use from=>`, followed without tags), and outside the file, the names of the system files. A
given tag known nowhere selects nothing: it is a typo, so bench refuses it before a run is made.

The names of an expression are JUBE's: the words between its operators (jube/util/util.py,
`valid_tags`, splits on `()|+!^`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec.sources import IncludePath, read_tree
from caramel.stages.spec.tree import Node

# a tag name: what the operators and blanks leave (spec.tags' tokens)
_NAME = re.compile(r"[^\s!+|()^]+")
MOST_FILES = 200  # files followed from one benchmark file: include loops end here too


def tag_names(expr: str) -> set[str]:
    """The tag names a tag expression mentions, whether it holds or not (never an error: a malformed
    expression is reported where it is evaluated)."""
    return set(_NAME.findall(expr))


def tags_in(root: Node) -> set[str]:
    """Every tag name `root` and the elements below it mention, active or not."""
    found: set[str] = set()
    for node in root.iter():
        if "tag" in node.attrs:
            found |= tag_names(node.attrs["tag"])
        found |= _element_tags(node)
    return found


def _element_tags(node: Node) -> set[str]:
    """The tag names a `<check_tags>` expression or a `<tag>` names."""
    if node.tag == "check_tags":
        return tag_names(node.text)
    if node.tag != "tag":
        return set()
    name = node.attrs.get("name", "").strip()
    if name:  # <tags><tag name="x">
        return {name}
    return {word.strip() for word in node.text.split(",") if word.strip()}  # <selection><tag>a,b


def _files_read(root: Node) -> Iterable[str]:
    """The file names `root` reads elements or sets from (no `$` names: they depend on
    parameters)."""
    for node in root.iter():
        names = [node.attrs.get("init_with", "").partition(":")[0], *_from_files(node)]
        yield from (name.strip() for name in names if name.strip() and "$" not in name)


def _from_files(node: Node) -> list[str]:
    """The files an `<include>` or `<use>` names in from=."""
    if node.tag not in ("include", "use"):
        return []
    return [part.partition(":")[0] for part in node.attrs.get("from", "").split(",")]


def file_tags(root: Node, include: IncludePath) -> set[str]:
    """The tags `root` (a file's whole tree) and every file it reads mention. A file that cannot be
    found or read adds nothing here: the load that needs it says why."""
    found = tags_in(root)
    todo, seen = list(_files_read(root)), set[str]()
    while todo and len(seen) < MOST_FILES:
        name = todo.pop()
        try:
            path = include.find(name, root.where)
            if path in seen:
                continue
            seen.add(path)
            tree = read_tree(path, include.folders)
        except SpecError:
            continue
        found |= tags_in(tree)
        todo += _files_read(tree)
    return found


def check_given_tags(
    given: Iterable[str],
    known: Collection[str],
    systems: Collection[str],
    where: Location | None,
    what: str = "this file",
) -> None:
    """Refuse the given tags that select nothing (neither in `known`, those of `what`, nor in
    `systems`), each with the tag it most likely meant: the same letters in another case first."""
    everything = set(known) | set(systems)
    unknown = [tag for tag in dict.fromkeys(given) if tag not in everything]
    if not unknown:
        return
    hints = [f"'{tag}': {_meant(tag, everything)}" for tag in unknown]
    raise SpecError(
        _selects_nothing(unknown, what),
        where,
        hint="; ".join(hints) + "; a tag the file reads no other way is declared in <tags> "
        "(docs/file-format.md, Tags)",
    )


def _selects_nothing(unknown: list[str], what: str) -> str:
    words = ", ".join(f"'{tag}'" for tag in unknown)
    one = len(unknown) == 1
    return (
        f"tag{'' if one else 's'} {words} select{'s' if one else ''} nothing: "
        f"no system file is named so and no tag expression of {what} uses "
        + ("it" if one else "them")
    )


def _meant(tag: str, everything: set[str]) -> str:
    same = sorted(name for name in everything if name.lower() == tag.lower())
    if same:
        return f"tags are case-sensitive: did you mean '{same[0]}'?"
    close = did_you_mean(tag, everything)
    if close:
        return close
    return "known tags: " + (", ".join(sorted(everything)) or "none")
