"""cli/tables.py: the one printer of aligned tables (plain when piped, rich on a terminal)."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from caramel.cli.tables import RICH_ROWS, RIGHT, Column, print_table, table_lines


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_is_the_hand_written_layout() -> None:
    out = io.StringIO()
    print_table(out, ["step", Column("all", RIGHT), Column("done", RIGHT)], [["run", 12, 3], ["analyse-long", 1, 10]],
                indent=2)
    assert out.getvalue() == ("  step          all  done\n"
                              "  run            12     3\n"
                              "  analyse-long    1    10\n")


def test_no_trailing_blanks_and_no_header_when_asked() -> None:
    assert table_lines(["a", "b"], [["x", ""], ["longer", "y"]], header=False) == ["x", "longer  y"]
    assert table_lines(["a"], [], header=False) == []


def test_a_terminal_gets_rich_without_wrapping_or_markup() -> None:
    out = Terminal()
    long = "x" * 300
    print_table(out, ["name", "value"], [[long, "[bold]not markup[/]"]])
    lines = out.getvalue().splitlines()
    assert any(long in line and "[bold]not markup[/]" in line for line in lines)  # one line, brackets kept
    assert any(set(line.strip()) == {"─"} for line in lines)  # rich's rule under the header


def test_a_long_table_on_a_terminal_stays_plain() -> None:
    out = Terminal()
    print_table(out, ["n"], [[i] for i in range(RICH_ROWS + 1)])
    assert "─" not in out.getvalue() and out.getvalue().splitlines()[1] == "0"


cell = st.text(st.characters(categories=("L", "N", "P")), min_size=1, max_size=12)


@given(st.integers(1, 4).flatmap(lambda n: st.tuples(st.lists(cell, min_size=n, max_size=n),
                                                    st.lists(st.lists(cell, min_size=n, max_size=n), max_size=6))))
def test_plain_lines_split_back_into_their_cells(table: tuple[list[str], list[list[str]]]) -> None:
    """Greppable: cells without blanks come back from a line with `split()`, in their columns."""
    head, rows = table
    lines = table_lines(head, rows)
    assert [line.split() for line in lines] == [head, *rows]
    assert all(line == line.rstrip() for line in lines)


# Text from imports shown in a terminal (docs/security.md, "Secrets and what reaches the terminal")
HOSTILE = "b\x1b]0;owned\x07\x1b[2J\x1b[31mred\u202etxt.exe\u2066\x9b\x00\tend"


@given(st.text())
def test_no_control_character_reaches_a_table(text: str) -> None:
    """docs/security.md, "Secrets and what reaches the terminal": no C0/C1 control, ESC or bidi
    override of a cell reaches the output, plain or rich."""
    import re

    unsafe = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
    for out in (io.StringIO(), Terminal()):
        print_table(out, ["a"], [[text]], header=True)
        drawn = out.getvalue().replace("\n", "")
        if isinstance(out, Terminal):  # rich styles the header: its escapes, not the cell's
            drawn = re.sub(r"\x1b\[[0-9;]*m", "", drawn)
        assert not unsafe.search(drawn)


def test_bench_history_list_shows_an_imports_escapes_escaped(tmp_path) -> None:
    """docs/security.md, "Secrets and what reaches the terminal": `bench history list` over an
    imported export whose benchmark name holds a window title, a screen clear, colours and a
    right-to-left
    override shows them as `\\x1b`, `\\u202e`..., never raw."""
    import json

    from tests.run_bench import bench, isolated_env

    export = tmp_path / "other-site.jsonl"
    # without its NUL: an import refuses a NUL, naming the line (test_hostile_values.py)
    run = {"run_key": "k1", "benchmark": HOSTILE.replace("\x00", ""), "started": 1.0}
    figures = [{"table": "t", "row": {}, "name": "x", "samples": [1.0]}]
    export.write_text(json.dumps({"schema": 2, "run": run, "metrics": figures}) + "\n")
    env = isolated_env(tmp_path)
    history = str(tmp_path / "h.db")
    assert bench("import", str(export), "--history", history, cwd=tmp_path, env=env).returncode == 0
    done = bench("history", "list", "--history", history, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout and "\x9b" not in done.stdout
    escaped = "b\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\u202etxt.exe\\u2066\\x9b\\tend"
    assert escaped in done.stdout
