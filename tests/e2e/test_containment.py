"""Containment (issue 22): caramel writes and deletes only inside what it made, whatever a benchmark
file, a run folder or a stored model says. Each test is one probe that broke an earlier caramel."""

from __future__ import annotations

from pathlib import Path

from tests.run_bench import bench, isolated_env

SHARED = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="sh" outpath="runs">
    <parameterset name="p"><parameter name="i">0,1</parameter>
      <parameter name="where">{where}</parameter></parameterset>
    <step name="s" shared="{shared}">
      <use>p</use>
      <do>echo $i</do>
      <do shared="true">echo shared</do>
    </step>
  </benchmark>
</jube>
"""


def precious(tmp_path: Path) -> Path:
    folder = tmp_path / "precious" / "sub"
    folder.mkdir(parents=True)
    (folder / "thesis.tex").write_text("years of work\n")
    return folder


def test_a_shared_name_leaving_the_run_folder_is_refused_at_plan(tmp_path: Path) -> None:
    (tmp_path / "b.xml").write_text(SHARED.format(shared="x/../../../../precious/sub", where=""))
    out = bench("plan", "--no-eval", "b.xml", cwd=tmp_path, env=isolated_env(tmp_path))
    assert out.returncode == 2, out.stderr
    assert "b.xml:" in out.stderr and "shared" in out.stderr and "outside" in out.stderr


def test_a_shared_name_made_by_a_parameter_is_refused_and_remove_deletes_nothing_outside(tmp_path: Path) -> None:
    kept = precious(tmp_path)
    (tmp_path / "b.xml").write_text(SHARED.format(shared="$where", where="x/../../../precious/sub"))
    env = isolated_env(tmp_path)
    out = bench("run", "b.xml", cwd=tmp_path, env=env)
    assert "shared name" in out.stderr + out.stdout and "outside" in out.stderr + out.stdout, out.stderr
    bench("remove", "-i", "last", "-w", "0", "-f", cwd=tmp_path, env=env)
    assert (kept / "thesis.tex").read_text() == "years of work\n"
