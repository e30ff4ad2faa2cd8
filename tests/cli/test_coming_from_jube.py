"""docs/coming-from-jube.md's table of JUBE's command line (issue 37): every `bench` spelling it
lists parses, and every JUBE 2.7 command and option has a row.

JUBE's commands and options below are those of JUBE 2.7's parser (FZJ-JSC/JUBE, jube/main.py:
`gen_parser_conf` for bench-wide ones, `gen_subparser_conf` and `_get_args_parser`'s `help` for
the commands; a command's positional arguments are its own row)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from caramel.cli.main import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "coming-from-jube.md"

JUBE_OPTIONS = {
    "": ["-V", "-v", "--debug", "--force", "--strict", "--devel"],
    "run": ["--only-bench", "--not-bench", "-t", "-i", "-e", "--hide-animation", "--include-path",
            "-a", "-r", "-m", "-o"],
    "continue": ["-i", "--hide-animation", "-e", "-a", "-r"],
    "analyse": ["-i", "-u", "--include-path", "-t"],
    "result": ["-i", "-a", "-u", "--include-path", "-t", "-o", "-r", "-n", "-s", "--select", "--exclude"],
    "info": ["-i", "-s", "-p", "-c", "-w"],
    "status": ["-i"],
    "tag": ["-i"],
    "output": ["-i", "-s", "-w", "-d", "-o"],
    "comment": ["-i", "-a"],
    "remove": ["-i", "-w", "-f"],
    "update": [],
    "log": ["-c", "-i"],
    "complete": ["-c"],
    "help": [],
}


def table_rows() -> list[tuple[str, str]]:
    """(JUBE cell, bench cell) of each row of the table under "Every JUBE command and option"."""
    text = DOC.read_text().split("## Every JUBE command and option", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows.append((cells[0], cells[1]))
    return rows


def code(cell: str) -> str:
    found = re.fullmatch(r"`([^`]*)`", cell)
    return found.group(1).replace("\\|", "|") if found else ""


def test_the_table_has_a_row_for_every_jube_command_and_option() -> None:
    listed = {code(jube) for jube, _ in table_rows()}
    expected = {f"jube {command} {option}".replace("  ", " ").strip()
                for command, options in JUBE_OPTIONS.items() for option in options}
    expected |= {f"jube {command}" for command in JUBE_OPTIONS if command}
    assert expected - listed == set()
    assert listed - expected == set()  # nothing JUBE does not have


@pytest.mark.parametrize("spelling", [code(bench) for _, bench in table_rows() if code(bench)])
def test_every_bench_spelling_in_the_table_parses(spelling: str, capsys: pytest.CaptureFixture[str]) -> None:
    words = shlex.split(spelling)
    assert words[0] == "bench"
    parser = build_parser(words[1:])
    try:
        args, extra = parser.parse_known_args(words[1:])
    except SystemExit as stop:  # -V prints the version and exits 0; anything else is refused
        assert stop.code == 0 and capsys.readouterr().out.startswith("caramel "), spelling
        return
    assert extra == [] and callable(args.func), spelling


def test_every_bench_cell_is_a_spelling_or_a_dash() -> None:
    for jube, bench in table_rows():
        assert bench == "—" or code(bench).startswith("bench "), (jube, bench)
