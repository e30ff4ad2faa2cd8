"""The README and docs/: every relative link resolves to a file (and a heading, where it names one),
and the README's benchmark file runs as the README says."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from tests.run_bench import bench, isolated_env

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# GitHub's anchors: every heading level, the same slugs (lower case, punctuation dropped, spaces to
# hyphens, a repeated heading numbered -1, -2, ...)
MARKDOWN = MarkdownIt("commonmark").enable("table").use(anchors_plugin, max_level=6)


def parsed(page: Path) -> tuple[set[str], list[tuple[int, str]]]:
    """The heading anchors of `page` and its links (line, target), code blocks and spans left out."""
    anchors: set[str] = set()
    links: list[tuple[int, str]] = []
    for token in MARKDOWN.parse(page.read_text(encoding="utf-8")):
        if token.type == "heading_open":
            anchors.add(str(token.attrs["id"]))
        line = token.map[0] + 1 if token.map else 0
        links += [
            (line, str(c.attrs["href"])) for c in token.children or [] if c.type == "link_open"
        ]
    return anchors, links


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of `page` whose file, or whose heading in a Markdown file, is missing
    (paths named relative to `root`)."""
    broken = []
    for line, href in parsed(page)[1]:
        target = urlsplit(href)
        if target.scheme or target.netloc:
            continue  # a web address: not checked offline
        file = (page.parent / unquote(target.path)).resolve() if target.path else page
        where = f"{page.relative_to(root)}:{line}: {href}"
        if not file.exists():
            broken.append(f"{where} (no {file.relative_to(root)})")
        elif target.fragment and file.suffix == ".md" and target.fragment not in parsed(file)[0]:
            broken.append(f"{where} (no heading #{target.fragment} in {file.name})")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    """The check itself: it finds a missing file and a missing heading, and passes what exists."""
    (tmp_path / "a.md").write_text("# The `bench` command\n\n## Two\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#the-bench-command) [ok](a.md#two) [ok](#own) [web](https://x.invalid/n)\n"
        "`[code](nowhere.md)`\n\n## Own\n\n[gone](c.md) [no heading](a.md#three)\n"
    )
    assert broken_links(page, tmp_path) == [
        "b.md:6: c.md (no c.md)",
        "b.md:6: a.md#three (no heading #three in a.md)",
    ]


def test_the_readme_benchmark_file_runs(tmp_path: Path) -> None:
    """The file the README shows plans two workpackages and `bench result` fills its table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```yaml\n(.*?)```", readme, re.S)
    assert shown, "the README shows a benchmark file in a ```yaml block"
    (tmp_path / "sum.yaml").write_text(shown.group(1))
    env = isolated_env(tmp_path)
    run = bench("run", "sum.yaml", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    result = bench("result", "-i", "last", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    rows = [
        line
        for line in result.stdout.splitlines()
        if re.match(r"\|\s+\d+000000 \|\s+[\d.]+ \|", line)
    ]
    assert len(rows) == 2, result.stdout
