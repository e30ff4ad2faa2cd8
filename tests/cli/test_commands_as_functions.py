"""Commands are functions over typed options that write to the stream they are given: nothing of
any command (`run_benchmarks`, `status`, `compare`, `plan_command`, ...) or a campaign's tables reaches
sys.stdout, and no option travels on an argparse namespace."""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import os
from pathlib import Path

import pytest

from caramel.cli.analyse import AnalyseOptions, analyse
from caramel.cli.baseline import BaselineOptions, set_baseline
from caramel.cli.benchmarks import ListOptions, list_benchmarks
from caramel.cli.cancel import CancelOptions, cancel
from caramel.cli.common import BenchmarkOptions
from caramel.cli.compare import CompareOptions, compare
from caramel.cli.config import ConfigOptions, config
from caramel.cli.container import ContainerOptions, container
from caramel.cli.continue_cmd import ContinueOptions, continue_command
from caramel.cli.dashboard import DashboardOptions, dashboard
from caramel.cli.export import ExportOptions, ImportOptions, export, import_command
from caramel.cli.history_cmd import HistoryOptions, history_command
from caramel.cli.info import InfoOptions, info_command
from caramel.cli.log import LogOptions, log
from caramel.cli.main import build_parser
from caramel.cli.methodology import MethodologyOptions
from caramel.cli.plan import PlanOptions, plan_command
from caramel.cli.predict import PredictOptions, predict
from caramel.cli.remove import RemoveOptions, remove
from caramel.cli.report import ReportOptions, report
from caramel.cli.result import ResultOptions, result
from caramel.cli.run import RunOptions, run_benchmarks
from caramel.cli.status import StatusOptions, status
from caramel.cli.system import SystemOptions, system_command
from caramel.stages.spec.model import Repeat

CLI = Path(__file__).parents[2] / "src" / "caramel" / "cli"

SMALL = """name: small
outpath: out
parameterset:
  - {name: p, parameter: [{name: size, type: int, _: "1,2"}]}
step:
  - {name: hello, use: p, do: 'echo "value: $size"'}
patternset:
  - {name: pat, pattern: [{name: value, type: int, _: 'value: $jube_pat_int'}]}
analyser:
  - {name: ana, use: pat, analyse: {step: hello, file: stdout}}
result:
  - {use: ana, table: {name: t, style: csv, column: [size, value]}}
"""


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CARAMEL_HISTORY", str(tmp_path / "history.db"))
    (tmp_path / "small.yaml").write_text(SMALL)
    return tmp_path


def test_run_status_result_continue_write_to_the_given_stream(small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert run_benchmarks(RunOptions(source=BenchmarkOptions(file="small.yaml"), quiet=True), out) == 0
    assert "run 000000 of small: 2 done" in out.getvalue()
    run_dir = str(small / "out" / "000000")
    shown = io.StringIO()
    assert status(StatusOptions(dir=run_dir), shown) == 0 and f"run 000000 of small: {run_dir}" in shown.getvalue()
    tables = io.StringIO()
    assert result(ResultOptions(dir=run_dir, no_history=True), tables) == 0
    assert tables.getvalue() == "size,value\n1,1\n2,2\n\n"
    went_on = io.StringIO()
    assert continue_command(ContinueOptions(dir=run_dir, quiet=True), went_on) == 0 and "2 done" in went_on.getvalue()
    described = io.StringIO()
    assert info_command(InfoOptions(dir=run_dir), described) == 0 and "step hello: 2 workpackages" in described.getvalue()
    one = io.StringIO()
    assert info_command(InfoOptions(dir=run_dir, workpackage=1), one) == 0
    assert one.getvalue().splitlines()[-1].split() == ["size", "=", "2"]
    ran = io.StringIO()
    assert log(LogOptions(dir=run_dir, workpackages=(1,)), ran) == 0 and '    $ echo "value: 2"' in ran.getvalue()
    told = io.StringIO()
    assert cancel(CancelOptions(dir=run_dir), told) == 0 and told.getvalue() == f"run {run_dir}: no job to cancel\n"
    removed = io.StringIO()
    assert remove(RemoveOptions(dir=run_dir, workpackages=(1,), force=True), removed) == 0
    assert removed.getvalue().startswith("removed workpackage 1 of ")
    assert config(ConfigOptions(json=True), io.StringIO()) == 0
    assert capsys.readouterr().out == ""


def test_options_come_from_the_parser_and_are_frozen(small: Path) -> None:
    args = build_parser(["run"]).parse_args(["run", "small.yaml", "--repeat", "2", "-t", "a", "b"])
    options = RunOptions.from_args(args)
    # --repeat N|auto (issue 34): a Repeat, no longer an int
    assert options.source.tags == ("a", "b") and options.repeat == Repeat(times=2)
    assert options.on_created is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.repeat = 3  # type: ignore[misc]
    assert not hasattr(args, "by_name") and not hasattr(args, "on_created")


def test_jube_outpath_is_a_setting_read_when_the_options_are_made(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUBE_BENCHMARK_OUTPATH", str(small / "elsewhere"))
    args = build_parser(["run"]).parse_args(["run", "small.yaml"])
    assert RunOptions.from_args(args).outpath == str(small / "elsewhere")
    assert run_benchmarks(RunOptions.from_args(args), io.StringIO()) == 0
    assert os.path.isdir(small / "elsewhere" / "000000")


def test_list_takes_a_folder_given_among_the_tags_without_changing_the_arguments(small: Path) -> None:
    (small / "mine").mkdir()
    (small / "mine" / "small.yaml").write_text(SMALL)
    args = build_parser(["list"]).parse_args(["list", "--tag", "small", "mine"])
    options = ListOptions.from_list_args(args)
    assert (options.dirs, options.tags) == (("mine",), ("small",)) and args.tags == ["small", "mine"]
    out = io.StringIO()
    assert list_benchmarks(options, out) == 0
    assert out.getvalue().splitlines()[1].split()[0] == "small" and len(out.getvalue().splitlines()) == 2


FIGURED = SMALL.replace("type: int, _: 'value:", "type: int, unit: s, _: 'value:")


@pytest.fixture
def two_runs(small: Path) -> tuple[str, str]:
    """Two runs of a benchmark whose `value` is a figure (it has a unit)."""
    (small / "small.yaml").write_text(FIGURED)
    for _ in range(2):
        assert run_benchmarks(RunOptions(source=BenchmarkOptions(file="small.yaml"), quiet=True), io.StringIO()) == 0
    return str(small / "out" / "000000"), str(small / "out" / "000001")


def test_plan_writes_the_table_and_the_json_to_the_given_stream(small: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    table = io.StringIO()
    assert plan_command(PlanOptions(source=BenchmarkOptions(file="small.yaml")), table) == 0
    assert table.getvalue().splitlines()[0] == "benchmark small: 2 workpackages"
    assert table.getvalue().splitlines()[2].split() == ["0", "hello", "0", "1"]
    doc = io.StringIO()
    assert plan_command(PlanOptions(source=BenchmarkOptions(file="small.yaml"), json=True), doc) == 0
    assert [wp["parameters"]["size"] for wp in json.loads(doc.getvalue())["workpackages"]] == [1, 2]
    assert capsys.readouterr().out == ""


def test_history_commands_write_to_the_given_stream(two_runs: tuple[str, str], small: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    first, second = two_runs
    analysed = io.StringIO()
    assert analyse(AnalyseOptions(dir=first), analysed) == 0
    assert analysed.getvalue().splitlines() == ["analyser ana: 2 results (2 analysed now, 0 unchanged)",
                                                f"tables: bench result {first}"]
    named = io.StringIO()
    assert set_baseline(BaselineOptions(name="ref", dir=first), named) == 0
    assert named.getvalue() == f"baseline 'ref': {first} (benchmark small, 2 figure(s))\n"
    compared = io.StringIO()
    assert compare(CompareOptions(dir=second, baseline="ref"), compared) == 0
    lines = compared.getvalue().splitlines()
    assert lines[0] == "000001 against ref:" and lines[2].split()[-2:] == ["within", "noise"]
    as_json = io.StringIO()
    assert compare(CompareOptions(dir=second, baseline="0", format="json"), as_json) == 0
    assert [v["verdict"] for v in json.loads(as_json.getvalue())] == ["within noise", "within noise"]
    listed = io.StringIO()
    assert history_command(HistoryOptions("list"), listed) == 0
    assert [line.split()[1] for line in listed.getvalue().splitlines()] == ["small", "small"]
    exported = io.StringIO()
    assert export(ExportOptions(), exported) == 0 and len(exported.getvalue().splitlines()) == 2
    (small / "runs.jsonl").write_text(exported.getvalue())
    taken = io.StringIO()
    assert import_command(ImportOptions(file="runs.jsonl", history=str(small / "other.db")), taken) == 0
    assert taken.getvalue() == "2 new run(s), 4 new figure(s) from runs.jsonl\n"
    page = io.StringIO()
    assert report(ReportOptions(html="report.html", dir=second), page) == 0
    assert page.getvalue() == "report of 1 run(s): report.html\n" and (small / "report.html").is_file()
    assert dashboard(DashboardOptions(output="dash.html")) == 0 and (small / "dash.html").is_file()
    assert capsys.readouterr().out == ""


def test_predict_writes_to_the_given_stream(two_runs: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(CompareOptions(dir=two_runs[1], baseline="0"), io.StringIO()) == 0  # both runs in the history
    predicted = io.StringIO()
    assert predict(PredictOptions(source=BenchmarkOptions(file="small.yaml"), json=True), predicted) == 0
    doc = json.loads(predicted.getvalue())
    assert doc["benchmark"] == "small" and {p["metric"] for p in doc["predictions"]} == {"value"}
    assert capsys.readouterr().out == ""


def test_system_and_container_write_to_the_given_stream(small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = io.StringIO()
    assert system_command(SystemOptions("show", name="local"), shown) == 0
    assert "system_scheduler: local" in shown.getvalue().splitlines()
    listed = io.StringIO()
    assert system_command(SystemOptions("list", json=True), listed) == 0
    assert "local" in {row["name"] for row in json.loads(listed.getvalue())}
    pulled = io.StringIO()
    pytest.importorskip("spython")
    assert container(ContainerOptions("pull", uri="docker://alpine", output=Path("a.sif"), dry_run=True), pulled) == 0
    assert pulled.getvalue().endswith(f" pull --name {small / 'a.sif'} docker://alpine\n")
    assert capsys.readouterr().out == ""


def test_the_rest_of_the_commands_options_come_from_the_parser() -> None:
    args = build_parser(["compare"]).parse_args(["compare", "run", "--targets", "t.yaml", "--estimator", "trimmed"])
    assert MethodologyOptions.from_args(args) == MethodologyOptions(targets="t.yaml", estimator="trimmed")
    args = build_parser(["plan"]).parse_args(["plan", "small.yaml", "--predict", "--from", "A100"])
    options = PlanOptions.from_args(args)
    assert options.predict and options.forecast.learn_from == "A100" and options.forecast.method == "auto"
    args = build_parser(["history"]).parse_args(["history", "remove", "KEY"])
    assert HistoryOptions.from_args(args) == HistoryOptions("remove", run_key="KEY")


def _offences(path: Path) -> list[str]:
    """Bare print() calls (no file=) and getattr(args, ...) in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id == "print" and not any(k.arg == "file" for k in node.keywords):
            found.append(f"{path.name}:{node.lineno}: print() to stdout")
        if node.func.id == "getattr" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "args":
            found.append(f"{path.name}:{node.lineno}: getattr(args, ...)")
    return found


def test_no_command_prints_to_stdout_or_reads_the_namespace_back() -> None:
    modules = [p for p in sorted(CLI.glob("*.py")) if p.name not in ("main.py", "tables.py")]
    assert len(modules) > 20
    assert [o for p in modules for o in _offences(p)] == []


def test_the_check_catches_a_bare_print_and_a_getattr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def run(args):\n    print(getattr(args, 'x', 1))\n    print('ok', file=None)\n")
    assert _offences(bad) == ["bad.py:2: print() to stdout", "bad.py:2: getattr(args, ...)"]
