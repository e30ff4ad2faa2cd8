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
