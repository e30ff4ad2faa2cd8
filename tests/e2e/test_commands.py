"""status, log, info, remove, --dry-run, -o, and how commands find a run (DIR and -i)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

SMALL = """name: small
outpath: out
parameterset:
  - name: p
    parameter:
      - {name: size, type: int, _: "1,2"}
      - {name: where, tag: "!gpu", _: cpu}
      - {name: where, tag: gpu, _: gpu}
step:
  - name: hello
    use: p
    do: echo "hello $size on $where"
"""


def test_dry_run_creates_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "small.yaml").write_text(SMALL)
    proc = bench("run", "small.yaml", "--dry-run", "--tag", "gpu", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "000000_hello" in proc.stdout and '$ echo "hello 2 on gpu"' in proc.stdout
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_info_log_status_and_run_selection(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "small.yaml").write_text(SMALL)
    proc = bench("run", "small.yaml", "--tag", "gpu", cwd=tmp_path, env=env)
    assert proc.returncode == 0 and "\x1b[" not in proc.stdout  # no progress display into a pipe
    assert (tmp_path / "out" / "000000" / "000001_hello" / "work" / "stdout").read_text() == "hello 2 on gpu\n"
    assert bench("run", "small.yaml", cwd=tmp_path, env=env).returncode == 0  # run 000001, without the tag

    info = json.loads(bench("info", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert info["run"] == 1 and info["tags"] == []
    info = json.loads(bench("info", "out", "-i", "0", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert info["tags"] == ["gpu"]
    assert [wp["parameters"] for wp in info["workpackages"]] == [{"size": "1", "where": "gpu"},
                                                                  {"size": "2", "where": "gpu"}]
    text = bench("info", str(tmp_path / "out" / "000000"), cwd=Path("/"), env=env).stdout
    assert "step hello: 2 workpackages" in text and "where = gpu" in text
    one = bench("info", "-i", "0", "-w", "1", cwd=tmp_path, env=env).stdout
    assert "jube_wp_id" in one and "size" in one

    log = bench("log", "-i", "0", cwd=tmp_path, env=env).stdout
    assert 'exit 0' in log and '$ echo "hello 1 on gpu"' in log
    events = bench("log", "--events", cwd=tmp_path, env=env).stdout
    assert "running" in events and "done" in events

    status = bench("status", "out", cwd=tmp_path, env=env).stdout  # an outpath: its last run
    assert "run 000001 of small" in status and "hello" in status
    missing = bench("status", "out", "-i", "7", cwd=tmp_path, env=env)
    assert missing.returncode == 2 and "no run 7" in missing.stderr


def test_outpath_option_is_relative_to_the_current_folder(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "small.yaml").write_text(SMALL)
    proc = bench("run", "b/small.yaml", "-o", "elsewhere", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "elsewhere" / "000000" / "000000_hello" / "work" / "stdout").exists()
    assert not (tmp_path / "b" / "out").exists()
    assert bench("continue", cwd=tmp_path, env=env).returncode == 0  # found through the registry


def test_errors_are_messages_not_tracebacks(tmp_path: Path, env: dict[str, str]) -> None:
    proc = bench("continue", "nowhere", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "shared.xml").write_text(
        '<jube><benchmark name="s" outpath="o"><step name="a"><do shared="true">x</do></step></benchmark></jube>')
    proc = bench("run", "shared.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "needs shared=" in proc.stderr and "Traceback" not in proc.stderr


ZIPPED = """name: zipped
outpath: out
parameterset:
  - name: p
    parameter:
      - {name: b, _: "x,x,y"}
      - {name: a, _: "1,2"}
      - {name: fixed, _: same}
step:
  - name: s
    use: p
    do: echo $a $b
"""


def test_info_lists_the_varying_parameters_in_the_order_they_first_vary(tmp_path: Path, env: dict[str, str]) -> None:
    """`a` varies from the second workpackage on, `b` only later: the columns are a, then b, and the
    parameter that never varies is shown once above the table."""
    (tmp_path / "zipped.yaml").write_text(ZIPPED)
    assert bench("run", "zipped.yaml", cwd=tmp_path, env=env).returncode == 0
    lines = bench("info", "-i", "0", cwd=tmp_path, env=env).stdout.splitlines()
    at = lines.index("step s: 6 workpackages")
    assert lines[at + 1] == "  fixed = same"
    assert lines[at + 2].split() == ["id", "iter", "parents", "state", "a", "b"]
    assert [line.split()[-2:] for line in lines[at + 3:]] == [["1", "x"], ["2", "x"], ["1", "x"], ["2", "x"],
                                                              ["1", "y"], ["2", "y"]]
