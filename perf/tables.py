#!/usr/bin/env python3
"""What a table costs to print: cli/tables.py's plain text (piped) against rich (a terminal), and
what caramel.settings costs a command (read once at its start) and a call outside one.

    python3 perf/tables.py           # 100, 500 and 2,000 rows, 5 interleaved repeats
    python3 perf/tables.py --quick   # 100 and 500 rows, 3 repeats (seconds)

Prints the median time of each and the ratio rich / plain; RICH_ROWS (cli/tables.py) is where rich's
time stops being small next to a command's start (about 0.2 s). Prints the load average beside.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from caramel import settings  # noqa: E402
from caramel.cli import tables  # noqa: E402


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def once(rows: list[list[str]], out: io.StringIO) -> float:
    start = time.perf_counter()
    tables.print_table(out, ["id", "iter", "parents", "state", "size", "where"], rows, indent=2)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    sizes, repeats = ([100, 500], 3) if quick else ([100, 500, 2000], 5)
    tables.RICH_ROWS = max(sizes)  # measure rich at every size
    print(f"load average {os.getloadavg()[0]:.2f}")
    for n in sizes:
        rows = [[str(i), "0", f"{i - 1}", "done", str(i * 7), "cpu"] for i in range(n)]
        plain, rich = [], []
        for _ in range(repeats):  # interleaved: the machine's load falls on both alike
            plain.append(once(rows, io.StringIO()))
            rich.append(once(rows, Terminal()))
        p, r = statistics.median(plain), statistics.median(rich)
        print(
            f"{n:>6} rows  plain {p * 1e3:8.2f} ms  rich {r * 1e3:8.2f} ms  rich/plain "
            f"{r / p:7.1f}x"
        )
    calls = 2000
    start = time.perf_counter()
    for _ in range(calls):
        settings.load()
    loaded = (time.perf_counter() - start) / calls
    start = time.perf_counter()
    with settings.command_scope():
        for _ in range(calls):
            settings.current()
    pinned = (time.perf_counter() - start) / calls
    print(
        f"settings: load (a command's start) {loaded * 1e6:.0f} us; "
        f"current() in a command {pinned * 1e6:.2f} us"
    )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
