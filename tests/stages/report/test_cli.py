"""`bench result` options and `bench analyse` on a run made by the engine."""

from caramel.cli.main import main


def test_options(run_example, capsys, tmp_path):
    run_dir = run_example("chain")
    capsys.readouterr()
    assert main(["analyse", run_dir]) == 0
    out = capsys.readouterr().out
    assert "analyser both: 6 results (6 analysed now, 0 unchanged)" in out
    assert "analyser each: 8 results" in out
    assert main(["result", run_dir, "--only", "prepared", "--format", "markdown"]) == 0
    assert capsys.readouterr().out == ("**prepared**\n\n| dataset | samples |\n|---|---:|\n| small | 1000 |\n"
                                       "| large | 1100 |\n\n")
    assert main(["result", run_dir, "--table", "reduced", "--format", "pretty", "--output", str(tmp_path / "r.txt")]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "r.txt").read_text().startswith("reduced:\n| dataset |   lr |")
    assert main(["analyze", run_dir]) == 0
    assert "analyser both: 6 results (0 analysed now, 6 unchanged)" in capsys.readouterr().out


def test_reanalyse_ignores_the_cache(run_example, capsys):
    run_dir = run_example("files")
    assert main(["result", run_dir]) == 0
    capsys.readouterr()
    assert main(["analyse", run_dir, "--reanalyse"]) == 0
    assert "(6 analysed now, 0 unchanged)" in capsys.readouterr().out
