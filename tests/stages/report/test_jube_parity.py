"""`bench result` prints what JUBE 2.7.1 printed for the same benchmarks (data/jube/, see data/README.md)."""

import json
import os
import sqlite3

import pytest

from caramel.cli.main import main

from .conftest import DATA, golden


def result(capsys, run_dir, *args):
    capsys.readouterr()
    assert main(["result", run_dir, *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", ["files", "statistics", "chain"])
def test_tables_are_jubes(run_example, capsys, name):
    run_dir = run_example(name)
    assert result(capsys, run_dir) == golden(f"{name}.txt")
    assert result(capsys, run_dir, "--format", "csv") == golden(f"{name}.csv.txt")
    with open(os.path.join(run_dir, "result", os.listdir(os.path.join(run_dir, "result"))[0])) as handle:
        assert handle.read()  # result/<table>.dat written as JUBE writes it


def test_database_is_jubes(run_example, capsys):
    run_dir = run_example("database")
    assert result(capsys, run_dir) == ""
    with open(os.path.join(DATA, "jube", "database.json")) as handle:
        expected = json.load(handle)
    db = sqlite3.connect(os.path.join(run_dir, "result", "numbers.dat"))
    info = db.execute("PRAGMA table_info(numbers)").fetchall()
    assert [[row[1], row[2].lower()] for row in info] == expected["columns"]
    assert sorted(row[1] for row in info if row[5]) == expected["primary_key"]
    assert [list(r) for r in db.execute("SELECT * FROM numbers ORDER BY number")] == expected["rows"]
    db.close()
    result(capsys, run_dir)  # again: rows are replaced, not added
    db = sqlite3.connect(os.path.join(run_dir, "result", "numbers.dat"))
    assert db.execute("SELECT count(*) FROM numbers").fetchone()[0] == 2
    db.close()
