"""Commands are functions over typed options that write to the stream they are given: nothing of
`run_benchmarks`, `status`, `info_command`, `log`, `result`, `continue_command`, `cancel`, `remove`, `config` or a campaign's tables reaches
sys.stdout, and no option travels on an argparse namespace."""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import pytest

from caramel.cli.benchmarks import ListOptions, list_benchmarks
from caramel.cli.cancel import CancelOptions, cancel
from caramel.cli.common import BenchmarkOptions
from caramel.cli.config import ConfigOptions, config
from caramel.cli.continue_cmd import ContinueOptions, continue_command
from caramel.cli.info import InfoOptions, info_command
from caramel.cli.log import LogOptions, log
from caramel.cli.main import build_parser
from caramel.cli.remove import RemoveOptions, remove
from caramel.cli.result import ResultOptions, result
from caramel.cli.run import RunOptions, run_benchmarks
from caramel.cli.status import StatusOptions, status

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
    assert options.source.tags == ("a", "b") and options.repeat == 2 and options.on_created is None
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
    args = build_parser(["list"]).parse_args(["list", "--tags", "small", "mine"])
    options = ListOptions.from_list_args(args)
    assert (options.dirs, options.tags) == (("mine",), ("small",)) and args.tags == ["small", "mine"]
    out = io.StringIO()
    assert list_benchmarks(options, out) == 0
    assert out.getvalue().splitlines()[1].split()[0] == "small" and len(out.getvalue().splitlines()) == 2
