"""Filesets, substitutesets and the do's a segment runs (no shell involved)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caramel.errors import CaramelError, RunError
from caramel.stages.engine.commands import segment, shared_params, used_sets
from caramel.stages.engine.files import apply_substituteset, place
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import (
    Benchmark,
    Do,
    FileEntry,
    IOFile,
    Parameter,
    Parameterset,
    Step,
    Sub,
    Substituteset,
    Use,
)


def entry(action: str, path: str, base: Path, **kw) -> FileEntry:
    return FileEntry(action, path, base_dir=str(base), **kw)


def test_copy_link_names_globs_and_targets(tmp_path: Path) -> None:
    src, work = tmp_path / "src", tmp_path / "work"
    src.mkdir()
    work.mkdir()
    for name in ("a.cfg", "b.cfg", "data.txt"):
        (src / name).write_text(name)
    texts = {"n": "4", "ext": "cfg"}
    place(entry("copy", "src/*.$ext", tmp_path, target_dir="conf"), texts, {}, str(work), str(work))
    place(entry("copy", "src/data.txt;src/a.cfg", tmp_path, separator=";", name="d_$n.txt,first.cfg"),
          texts, {}, str(work), str(work))
    place(entry("link", "data.txt", tmp_path, source_dir="src", name="l_$n"), texts, {}, str(work), str(work))
    place(entry("copy", "d_4.txt", tmp_path, rel_path_ref="internal", name="again.txt"), texts, {}, str(work),
          str(work))
    place(entry("copy", "src/never", tmp_path, active="$n == 5"), texts, {}, str(work), str(work))
    assert sorted(os.listdir(work)) == ["again.txt", "conf", "d_4.txt", "first.cfg", "l_4"]
    assert sorted(os.listdir(work / "conf")) == ["a.cfg", "b.cfg"]
    assert os.readlink(work / "l_4") == str(src / "data.txt")
    assert (work / "again.txt").read_text() == "data.txt"


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no file matches"):
        place(entry("copy", "nothing*", tmp_path), {}, {}, str(tmp_path), str(tmp_path))
    with pytest.raises(RunError, match="2 files but 1 names"):
        place(entry("copy", "a,b", tmp_path, name="x"), {}, {}, str(tmp_path), str(tmp_path))


def test_substituteset_text_and_regex(tmp_path: Path) -> None:
    (tmp_path / "job.in").write_text("N=#N# T=#T# R=#ABC# keep=#abc#\n")
    os.chmod(tmp_path / "job.in", 0o755)
    sset = Substituteset("s", [IOFile("job.in", "job.sh"), IOFile("job.in", "log.txt", "a")],
                         [Sub("#N#", "$n"), Sub("#T#", "$$HOME"), Sub("#[A-Z]+#", "up", "regex")])
    apply_substituteset(sset, {"n": "4"}, str(tmp_path))
    apply_substituteset(sset, {"n": "5"}, str(tmp_path))
    assert (tmp_path / "job.sh").read_text() == "N=5 T=$HOME R=up keep=#abc#\n"
    assert os.stat(tmp_path / "job.sh").st_mode & 0o777 == 0o755
    assert (tmp_path / "log.txt").read_text() == "N=4 T=$HOME R=up keep=#abc#\nN=5 T=$HOME R=up keep=#abc#\n"


def test_segment_cycles_active_and_shared_stop(tmp_path: Path) -> None:
    step = Step("s", dos=[Do("echo $jube_wp_cycle $x"), Do("touch stop", active="$jube_wp_cycle == 1"),
                          Do("echo shared", shared=True), Do("echo after", stdout="o_$x", work_dir="d/$x",
                                                                done_file="ready")],
                cycles=2, shared="sh")
    bench = Benchmark("b", str(tmp_path), parametersets={"p": Parameterset("p", [
        Parameter("x", "v$jube_wp_cycle", update_mode="cycle")])})
    texts = Params({"x": "v0", "jube_wp_cycle": "0"}, cycles=({"x": "v1", "jube_wp_cycle": "1"},))  # as the plan records it
    seg = segment(bench, step, texts, str(tmp_path), 0, 0)
    assert [c.text for c in seg.commands] == ["echo 0 v0"] and seg.shared_stop == (0, 2)
    seg = segment(bench, step, texts, str(tmp_path), 0, 3)
    assert [(c.cycle, c.op, c.text) for c in seg.commands] == [(0, 3, "echo after"), (1, 0, "echo 1 v1"),
                                                               (1, 1, "touch stop")]
    after = seg.commands[0]
    assert after.stdout == str(tmp_path / "o_v0") and after.cwd == str(tmp_path / "d" / "v0")
    assert after.done_file == str(tmp_path / "d" / "v0" / "ready") and after.make_cwd
    assert texts.at_cycle(1) == {"x": "v1", "jube_wp_cycle": "1"}
    assert shared_params({"jube_wp_id": "3", "jube_step_name": "s", "x": "1"}) == {"jube_step_name": "s", "x": "1"}


def test_used_sets_follow_use_order_and_parameters() -> None:
    step = Step("s", uses=[Use(["files_$kind", "p"]), Use(["other,files_a"])])
    assert used_sets(step, {"kind": "b"}, {"files_a": 1, "files_b": 2, "other": 3}) == ["files_b", "other", "files_a"]


def test_copying_the_benchmark_folder_into_a_run_inside_it_is_a_clear_error(tmp_path: Path) -> None:
    work = tmp_path / "runs" / "000000" / "000000_s" / "work"
    work.mkdir(parents=True)
    (tmp_path / "input.txt").write_text("x")
    with pytest.raises(RunError, match="inside the folder it copies"):
        place(entry("copy", ".", tmp_path, name="bench"), {}, {}, str(work), str(work))


def test_a_full_disk_during_a_copy_names_the_files_and_the_cause(tmp_path: Path, monkeypatch) -> None:
    import errno
    import shutil

    src, work = tmp_path / "src", tmp_path / "work"
    (src / "data").mkdir(parents=True)
    (src / "data" / "big.bin").write_text("x")
    work.mkdir()

    def full(source, target, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", target)

    monkeypatch.setattr(shutil, "copyfile", full)  # what copy2 and copytree call
    with pytest.raises(RunError) as caught:
        place(entry("copy", "src/data", tmp_path), {}, {}, str(work), str(work))
    assert "no space left on device" in str(caught.value) and "big.bin" in str(caught.value)
    with pytest.raises(RunError) as caught:
        place(entry("copy", "src/data/big.bin", tmp_path), {}, {}, str(work), str(work))
    assert "no space left on the device" in str(caught.value) and str(work) in str(caught.value)
    assert "free space" in caught.value.hint


def test_a_copy_target_named_by_a_parameter_stays_in_the_work_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "a.txt").write_text("a")
    with pytest.raises(CaramelError, match="outside"):
        place(entry("copy", "a.txt", tmp_path, name="$n"), {"n": "../../escaped.txt"}, {}, str(work), str(work))
    assert not (tmp_path.parent / "escaped.txt").exists()
