"""The one printer of every aligned table on the command line.

    print_table(out, ["step", Column("all", RIGHT)], rows, indent=2)

Piped or redirected (what scripts and tests read), a table is plain text: columns two spaces apart,
padded with spaces, no trailing blanks and no box characters, so `grep` and `awk` read it. On a
terminal, rich draws it (a bold header over a rule), up to `RICH_ROWS` rows: rich takes about a
millisecond a row (perf/tables.py: hundreds of times the plain text's time), so a long table stays
plain. Neither ever wraps or cuts a cell: a line is as long as its row.

Every cell goes through `printable`: text that came from an import or a run folder cannot move the
cursor, retitle the window, clear the screen or reverse the line (docs/security.md, "Secrets and
what reaches the terminal").
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

Align = Literal["left", "right"]
LEFT: Align = "left"
RIGHT: Align = "right"
# above this many rows a terminal gets the plain table too: rich takes about 1 ms a row
# (perf/tables.py)
RICH_ROWS = 200


# C0 controls (tab and newline too: a row is one line), DEL, C1 controls (ESC's 8-bit forms), and
# the bidirectional embeddings, overrides and isolates that reorder what follows them
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with its control characters shown escaped (`\\x1b`, `\\u202e`), the rest as it is."""
    return _UNPRINTABLE.sub(
        lambda found: found.group().encode("unicode_escape").decode("ascii"), text
    )


CELL_WIDTH = 60  # the longest free text (a description, a parameter list) a listing shows whole


def clip(text: str, width: int) -> str:
    """`text` cut to `width` characters, the cut shown by "…" (never a word cut silently)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(count: int, noun: str) -> str:
    """`1 workpackage`, `2 workpackages`."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


@dataclass(frozen=True)
class Column:
    title: str
    align: Align = LEFT


def _columns(columns: Sequence[Column | str]) -> list[Column]:
    return [c if isinstance(c, Column) else Column(c) for c in columns]


def table_lines(
    columns: Sequence[Column | str],
    rows: Sequence[Sequence[object]],
    *,
    indent: int = 0,
    header: bool = True,
) -> list[str]:
    """The plain table: one line per row (the header first), without trailing blanks."""
    cols = _columns(columns)
    cells = _cells(cols, rows, header)
    if not cells:
        return []
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    pad = " " * indent
    return [(pad + _aligned(row, widths, cols)).rstrip() for row in cells]


def _cells(cols: list[Column], rows: Sequence[Sequence[object]], header: bool) -> list[list[str]]:
    """The table's cells as printable text, the titles first (with the header)."""
    titles = [[c.title for c in cols]] if header else []
    return titles + [[printable(str(cell)) for cell in row] for row in rows]


def _aligned(row: list[str], widths: list[int], cols: list[Column]) -> str:
    """A row's cells, each padded to its column's width on the column's side, two blanks apart."""
    return "  ".join(
        cell.rjust(width) if col.align == RIGHT else cell.ljust(width)
        for cell, width, col in zip(row, widths, cols, strict=True)
    )


def print_table(
    out: TextIO,
    columns: Sequence[Column | str],
    rows: Sequence[Sequence[object]],
    *,
    indent: int = 0,
    header: bool = True,
) -> None:
    """`rows` under `columns` on `out`: rich on a terminal, plain text otherwise (see the module's
    text)."""
    if header and 0 < len(rows) <= RICH_ROWS and _is_terminal(out):
        _print_rich(out, _columns(columns), rows, indent)
        return
    lines = table_lines(columns, rows, indent=indent, header=header)
    if lines:
        out.write(
            "\n".join(lines) + "\n"
        )  # one write: ten thousand print calls cost more than the table


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: plain text
        return False


def _print_rich(
    out: TextIO, columns: list[Column], rows: Sequence[Sequence[object]], indent: int
) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold"
    )
    for column in columns:
        table.add_column(column.title, justify=column.align, no_wrap=True, overflow="ignore")
    for row in rows:
        # Text: a cell's brackets are never markup
        table.add_row(*(Text(printable(str(cell))) for cell in row))
    drawn = io.StringIO()
    # As wide as the table needs (never wrapped); the indent is added to each line, since a padded
    # renderable would be padded out to the console's whole width.
    widest = max(len(line) for line in table_lines(columns, rows))
    console = Console(
        file=drawn,
        force_terminal=True,
        width=widest + 2 * len(columns) + 2,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
    )
    console.print(table)
    pad = " " * indent
    out.write("".join(pad + line.rstrip() + "\n" for line in drawn.getvalue().splitlines()))
