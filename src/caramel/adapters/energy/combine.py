"""Combine the per-rank energy files of one workpackage into one table, as CARAML does, and sum
them.

    python -m caramel.adapters.energy.combine DIR --output DIR/SYSTEM_energy.csv

Each `energy.<suffix>.csv` (a column: `<method>:<device>` rows in Wh, plus nodename, rank, status,
seconds) becomes one row `nodename,rank,<method>:<device>...`. Prints `Writing combined energy
DataFrame to PATH` (CARAML's line, the result table's EnergyFile) and the figures the benchmark
files analyse: `Energy status:`, and only when every rank measured, `Energy(Wh):`, `Energy
devices:`, `Average power(W):`. A rank without a working meter makes the whole workpackage's energy
unavailable: a partial sum would be a made-up number.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def read_energy_file(path: Path) -> dict[str, str]:
    with open(path, newline="") as handle:
        return {row[0]: row[1] for row in csv.reader(handle) if len(row) >= 2 and row[0]}


def _is_device(key: str) -> bool:
    """Whether a row of an energy file is a device's figure (`<method>:<device>`)."""
    return ":" in key


def combine(folder: Path, output: Path) -> list[str]:
    """Write the combined file; returns the summary lines to print."""
    ranks = [read_energy_file(p) for p in sorted(folder.glob("energy.*.csv"))]
    if not ranks:
        return ["Energy status: unavailable: no energy file was written"]
    devices = sorted({k for r in ranks for k in filter(_is_device, r)})
    _write_table(output, ranks, devices)
    lines = [f"Writing combined energy DataFrame to {output}"]
    failed = _failed_status(ranks, devices)
    if failed is not None:
        return [*lines, f"Energy status: {failed}"]
    return lines + _sum_lines(ranks)


def _write_table(output: Path, ranks: list[dict[str, str]], devices: list[str]) -> None:
    """One row per rank: nodename, rank, its figure of each device ("" for none), status."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["nodename", "rank", *devices, "status"])
        writer.writerows(
            [
                r.get("nodename", ""),
                r.get("rank", ""),
                *(r.get(d, "") for d in devices),
                r.get("status", ""),
            ]
            for r in ranks
        )


def _failed_status(ranks: list[dict[str, str]], devices: list[str]) -> str | None:
    """The first rank's status that is not ok, or that no device was measured; None when all
    measured."""
    bad = [r.get("status", "missing") for r in ranks if r.get("status") != "ok"]
    if bad:
        return bad[0]
    return None if devices else "unavailable: no device measured"


def _sum_lines(ranks: list[dict[str, str]]) -> list[str]:
    """The energy of all ranks' devices, their count and (over the longest rank) the power."""
    figures = [float(v) for r in ranks for k, v in r.items() if _is_device(k)]
    total, count = sum(figures), len(figures)
    seconds = max(float(r.get("seconds", 0)) for r in ranks)
    lines = ["Energy status: ok", f"Energy(Wh): {total:.6f}", f"Energy devices: {count}"]
    if seconds > 0:
        lines.append(f"Average power(W): {total * 3600 / seconds:.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="combine per-rank energy files of a workpackage")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    for line in combine(args.folder, args.output or args.folder / "combined_energy.csv"):
        print(line)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
