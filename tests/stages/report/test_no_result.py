"""A JUBE file without <result> and without patterns gets no table from `bench result`.

JUBE's `Benchmark.create_result` (jube/benchmark.py, called by jube/main.py `_benchmark_result`)
makes one table per <result> of the file, so `jube result` on JUBE's examples/tagging/tagging.xml
shows none. caramel's MAD `performance` table is for MAD-style benchmarks only
(analyse.performance.follows_mad_convention): a script that prints `performance:` lines, a
models.json entry, a declared `multiple_results` CSV.
"""

from caramel.cli.main import main
from caramel.stages.engine.session import start_run
from caramel.stages.spec.loader import load_one

# JUBE's examples/tagging/tagging.xml in short: a parameter chosen by tag, one echo, no <result>
TAGGING = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="tagging" outpath="bench_run">
    <parameterset name="param_set">
      <parameter name="hello_str" tag="!deu+eng">Hello</parameter>
      <parameter name="hello_str" tag="deu|!eng">Hallo</parameter>
    </parameterset>
    <step name="say_hello">
      <use>param_set</use>
      <do>echo '$hello_str'{printed}</do>
    </step>
  </benchmark>
</jube>
"""


def _run(tmp_path, monkeypatch, printed: str) -> str:
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tagging.xml").write_text(TAGGING.format(printed=printed))
    bench = load_one(str(tmp_path / "tagging.xml"), {"eng"})
    return start_run(bench, quiet=True, cwd=str(tmp_path)).run_dir


def test_a_file_without_result_shows_no_table(tmp_path, monkeypatch, capsys) -> None:
    run_dir = _run(tmp_path, monkeypatch, "")
    capsys.readouterr()
    assert main(["result", run_dir]) == 0
    out = capsys.readouterr().out
    assert "performance" not in out and "no figure" not in out, out


def test_a_file_printing_performance_lines_keeps_its_table(tmp_path, monkeypatch, capsys) -> None:
    run_dir = _run(tmp_path, monkeypatch, "; echo 'performance: 3.5 examples/sec'")
    capsys.readouterr()
    assert main(["result", run_dir, "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "tagging,3.5,examples/sec,done" in out, out


def test_asking_for_the_performance_table_of_a_run_without_it_is_a_usage_error(tmp_path, monkeypatch,
                                                                              capsys) -> None:
    """`-o performance` on the tagging run printed nothing and exited 0: it names a table the run
    does not make, as `-o NAME` of any table the run lacks, a usage error (exit 2) saying what
    makes that table and that this run has none of it."""
    run_dir = _run(tmp_path, monkeypatch, "")
    capsys.readouterr()
    assert main(["result", run_dir, "-o", "performance"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no table or database named 'performance' in benchmark 'tagging'" in captured.err
    assert "the performance table is MAD's" in captured.err and "this run has none of these" in captured.err
    assert "Traceback" not in captured.err


def test_the_performance_table_by_name_on_a_run_that_makes_it(tmp_path, monkeypatch, capsys) -> None:
    run_dir = _run(tmp_path, monkeypatch, "; echo 'performance: 3.5 examples/sec'")
    capsys.readouterr()
    assert main(["result", run_dir, "-o", "performance", "--format", "csv"]) == 0
    assert "tagging,3.5,examples/sec,done" in capsys.readouterr().out
