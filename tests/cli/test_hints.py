"""Hints that work where the user is (issue 37): every command bench prints for the user to type
next is one that works when pasted there, and no listing cuts a cell without saying so."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.cli import system as system_cli
from caramel.cli.tables import clip, plural
from caramel.consumers.catalog import name_for


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def _hinted(output: str, label: str) -> list[str]:
    """The words of the command printed after `label` (`its table: bench result -i last`)."""
    line = next(line for line in output.splitlines() if line.strip().startswith(label))
    return line.split(label, 1)[1].split()


def test_run_names_the_next_command_as_jube_does_and_it_works(tmp_path, env):
    # JUBE ends a run with `>>>>   result: jube result OUTPATH --id N` (jube/benchmark.py,
    # Benchmark.run); caramel names the run as the user can: -i last from the same folder
    ran = bench("run", "quickstart", "--tag", "local", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    command = _hinted(ran.stdout, "its table:")
    assert command == ["bench", "result", "-i", "last"]
    assert "go on with:" not in ran.stdout  # every workpackage is done: nothing to continue
    shown = bench(*command[1:], cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "mflops" in shown.stdout


def test_continue_names_the_run_as_the_user_named_it(tmp_path, env):
    assert bench("run", "quickstart", "--tag", "local", cwd=tmp_path, env=env).returncode == 0
    went = bench("continue", "quickstart_run", "-i", "0", cwd=tmp_path, env=env)
    assert went.returncode == 0, went.stderr
    assert _hinted(went.stdout, "its table:") == ["bench", "result", "quickstart_run", "-i", "0"]


def test_status_in_an_empty_folder_suggests_a_command_that_works(tmp_path, env):
    asked = bench("status", cwd=tmp_path, env=env)
    assert asked.returncode != 0
    assert "bench continue bench_run" not in asked.stderr  # no such folder here
    assert "bench run quickstart --tag local" in asked.stderr
    assert "Traceback" not in asked.stderr


def test_a_shipped_benchmark_is_named_by_its_name_in_hints(tmp_path, monkeypatch):
    import caramel.consumers.catalog as catalog

    shipped = catalog._first_named("llm")
    assert shipped is not None
    assert name_for(shipped.path) == "llm"  # not /…/site-packages/caramel/_shipped/…/llm.yaml
    own = tmp_path / "mine.yaml"
    own.write_text("name: mine\n")
    monkeypatch.chdir(tmp_path)
    assert name_for(str(own)) == "mine.yaml"  # not a catalog name: the path from here


def test_predict_without_history_suggests_the_name_and_keeps_the_tags(tmp_path, env):
    planned = bench("plan", "llm", "--tag", "800M", "A100", "--predict", cwd=tmp_path, env=env)
    assert "Traceback" not in planned.stderr
    assert "record some: bench run llm --tag 800M A100 --repeat 3" in planned.stderr
    assert "site-packages" not in planned.stderr and ".yaml" not in planned.stderr


def test_system_detect_prints_a_check_command_that_works_where_the_file_is(tmp_path, monkeypatch):
    draft = "description: drafted\nscheduler: local\n"
    monkeypatch.setattr(
        "caramel.adapters.systems.probe.detect", lambda name, partition, folder, backend=None: draft
    )
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    options = system_cli.SystemOptions(action="detect", output="mysite.yaml")
    assert system_cli.system_detect(options, out) == 0
    assert "bench system check mysite --systems ." in out.getvalue()
    checked = io.StringIO()
    check = system_cli.SystemOptions(action="check", name="mysite", systems=(".",))
    assert system_cli.system_check(check, checked) == 0
    assert "mysite" in checked.getvalue()


def test_a_system_with_nothing_to_check_says_so(tmp_path):
    out = io.StringIO()
    check = system_cli.SystemOptions(action="check", name="local")
    assert system_cli.system_check(check, out) == 0
    assert "0 of 0" not in out.getvalue()
    assert "nothing to check" in out.getvalue()


def test_a_long_cell_is_cut_with_an_ellipsis_and_counts_agree():
    assert clip("JobTime=00:05:00,RunTime=00:01:00", 20) == "JobTime=00:05:00,Ru…"
    assert len(clip("x" * 100, 60)) == 60
    assert clip("short", 60) == "short"
    assert plural(1, "workpackage") == "1 workpackage"
    assert plural(2, "workpackage") == "2 workpackages"


@pytest.mark.parametrize("name, tags", [("llm", ["117M", "local"]), ("resnet50", ["local"])])
def test_a_local_plan_leaves_no_system_reference_unsubstituted(tmp_path, env, name, tags):
    # the history's `container` of a local run read "$system_image_dir/$system_image_pytorch"
    import json
    import re

    planned = bench("plan", name, "--tag", *tags, "--format", "json", cwd=tmp_path, env=env)
    assert planned.returncode == 0, planned.stderr
    left = {
        key
        for key, value in re.findall(r'"(\w+)": "((?:[^"\\]|\\.)*)"', planned.stdout)
        if "$system_" in value and key != "job_script"  # the job script of a GPU system, unused
    }
    assert left == set(), json.dumps(sorted(left))


def test_the_reports_footer_points_where_a_wheel_user_can_read_and_explains_what_is_drawn(
    tmp_path, env
):
    assert bench("run", "quickstart", "--tag", "local", cwd=tmp_path, env=env).returncode == 0
    assert bench("result", "-i", "last", cwd=tmp_path, env=env).returncode == 0
    made = bench("report", "-i", "last", "--html", "r.html", cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    page = (tmp_path / "r.html").read_text()
    footer = page.split("<footer>", 1)[1].split("</footer>", 1)[0]
    assert "docs/history.md" not in page  # a wheel holds no docs/
    assert "bench compare --help" in footer
    assert "Dashed" not in footer  # quickstart's sizes are no hardware: no ideal-scaling line
    assert "1 run of 1 benchmark" in page  # not "1 runs"
    # the run's table rounded as on a terminal: no float written whole
    import re

    cells = re.findall(r"<td>(-?\d+\.\d+)</td>", page)
    assert cells and all(len(c.replace(".", "").lstrip("-0")) <= 4 for c in cells), cells
