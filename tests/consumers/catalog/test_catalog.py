"""caramel.consumers.catalog and `bench benchmarks` / `bench list`: names, tags, origins, did-you-mean."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run_bench import isolated_env

from caramel.consumers.catalog import (
    CatalogError,
    find_benchmarks,
    resolve_benchmark,
    select_by_tags,
)
from caramel.resources import shipped

BENCH = "outpath: out\nstep: {name: s, do: echo hi}\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CARAMEL_BENCHMARKS_PATH", raising=False)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "alpha.yaml").write_text("name: alpha_benchmark\nmeta: {description: first, tags: [nlp, small], "
                                     "systems: [local]}\n" + BENCH)
    (mine / "beta.xml").write_text('<jube><benchmark name="b" outpath="o"><comment>second one</comment>'
                                   '<step name="s"><do>echo</do></step></benchmark></jube>')
    (mine / "platform.xml").write_text('<jube><parameterset name="p"/></jube>')  # no benchmark: not listed
    (mine / "notes.txt").write_text("not a benchmark")
    return mine


def test_find_lists_given_then_shipped(folder: Path) -> None:
    entries = {e.name: e for e in find_benchmarks([str(folder)])}
    assert {"alpha", "beta", "llm", "resnet50"} <= set(entries)
    assert "platform" not in entries and "notes" not in entries
    assert entries["alpha"].origin == str(folder) and entries["llm"].origin == "shipped"
    assert entries["alpha"].meta.description == "first" and entries["alpha"].meta.systems == ("local",)
    assert entries["beta"].meta.description == "second one"  # the comment when meta has none
    assert entries["llm"].path == str(shipped("benchmarks") / "llm.yaml")


def test_env_path_is_user_and_first_name_wins(folder: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "alpha.yaml").write_text("name: a2\n" + BENCH)
    (other / "gamma.yaml").write_text("name: g\n" + BENCH)
    monkeypatch.setenv("CARAMEL_BENCHMARKS_PATH", f"{other}{__import__('os').pathsep}{tmp_path / 'none'}")
    entries = {e.name: e for e in find_benchmarks([str(folder)])}
    assert entries["gamma"].origin == "user"
    assert entries["alpha"].path == str(folder / "alpha.yaml")


def test_select_by_tags_any_tag_and_name(folder: Path) -> None:
    entries = find_benchmarks([str(folder)])
    assert [e.name for e in select_by_tags(entries, ["nlp"])] == ["alpha"]
    assert [e.name for e in select_by_tags(entries, ["beta", "small"])] == ["alpha", "beta"]
    with pytest.raises(CatalogError) as err:
        select_by_tags(entries, ["nlq"])
    assert "did you mean 'nlp'" in str(err.value) and "existing tags:" in str(err.value)
    assert "small" in err.value.hint and "resnet50" in err.value.hint


def test_resolve(folder: Path, tmp_path: Path, monkeypatch) -> None:
    assert resolve_benchmark("alpha", [str(folder)]) == str(folder / "alpha.yaml")
    assert resolve_benchmark("llm") == str(shipped("benchmarks") / "llm.yaml")
    monkeypatch.chdir(folder)
    assert resolve_benchmark("beta.xml") == "beta.xml"  # an existing file is a path
    assert resolve_benchmark("missing/x.yaml") == "missing/x.yaml"  # a path: the loader says it is missing
    with pytest.raises(CatalogError) as err:
        resolve_benchmark("resnet5")
    assert "did you mean 'resnet50'" in err.value.hint and "known benchmarks: " in err.value.hint


def test_broken_file_is_listed_with_its_error(folder: Path) -> None:
    (folder / "broken.yaml").write_text("name: x\nmeta: {devices: many}\n" + BENCH)
    entry = next(e for e in find_benchmarks([str(folder)]) if e.name == "broken")
    assert "devices='many'" in entry.error and str(folder / "broken.yaml") + ":2" in entry.error
    with pytest.raises(CatalogError):
        select_by_tags([entry], ["broken"])


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = isolated_env(cwd)
    return subprocess.run([sys.executable, "-m", "caramel", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.slow
def test_cli_benchmarks_and_list(folder: Path, tmp_path: Path) -> None:
    out = bench("benchmarks", "--benchmarks", str(folder), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["name", "description", "tags", "systems", "origin"]
    alpha = next(line for line in lines if line.startswith("alpha"))
    assert "first" in alpha and "alpha,nlp,small" in alpha and "local" in alpha and str(folder) in alpha
    assert any(line.startswith("llm") and line.rstrip().endswith("shipped") for line in lines)
    out = bench("list", "--tag", "nlp", "beta", str(folder), "--format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [d["name"] for d in json.loads(out.stdout)] == ["alpha", "beta"]
    out = bench("list", "--tag", "nope", cwd=tmp_path)
    assert out.returncode == 2 and "no benchmark has the tag nope" in out.stderr and "Traceback" not in out.stderr


def test_cli_unknown_name_lists_known(tmp_path: Path) -> None:
    out = bench("plan", "lm", "--tag", "117M", "local", cwd=tmp_path)
    assert out.returncode == 2
    assert "no benchmark file or benchmark named 'lm'" in out.stderr and "llm" in out.stderr


def test_resolve_reads_only_the_files_that_can_carry_the_name(folder: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench run NAME` reads NAME's file (and any models.json), never every benchmark file of the search
    folders: reading the shipped ones cost the README's job 45 ms of CPU (docs/benchmarks.md)."""
    import caramel.consumers.catalog as catalog

    read: list[str] = []
    real = catalog.read_tree
    monkeypatch.setattr(catalog, "read_tree", lambda path, *a: read.append(Path(path).name) or real(path, *a))
    assert resolve_benchmark("llm", [str(folder)]) == str(shipped("benchmarks") / "llm.yaml")
    assert read == ["llm.yaml"]
    read.clear()
    assert resolve_benchmark("alpha", [str(folder)]) == str(folder / "alpha.yaml")
    assert read == ["alpha.yaml"]


def test_resolve_finds_what_the_listing_lists(folder: Path, tmp_path: Path) -> None:
    """The short path answers as the full listing does: first folder first, a file without a benchmark
    skipped (the next folder's file of that name is meant), a models.json entry by its name."""
    other = tmp_path / "other"
    other.mkdir()
    (folder / "gamma.xml").write_text('<jube><parameterset name="p"/></jube>')  # no benchmark in it: not a gamma
    (other / "gamma.yaml").write_text("name: g\n" + BENCH)
    (other / "alpha.yaml").write_text("name: a2\n" + BENCH)  # the first folder's alpha wins
    (other / "models.json").write_text(json.dumps([{"name": "zeta", "tags": ["t"], "scripts": "run.sh"},
                                                   {"name": "alpha", "tags": ["t"], "scripts": "run.sh"}]))
    (other / "zeta.yaml").write_text("name: z\n" + BENCH)  # after models.json: its entry zeta is meant
    dirs = [str(folder), str(other)]
    listed = {e.name: e.path for e in find_benchmarks(dirs)}
    for name in ("alpha", "beta", "gamma", "zeta", "llm"):
        assert resolve_benchmark(name, dirs) == listed[name], name
    assert listed["gamma"] == str(other / "gamma.yaml") and listed["zeta"] == str(other / "models.json")
