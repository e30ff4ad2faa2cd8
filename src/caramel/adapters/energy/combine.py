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


def combine(folder: Path, output: Path) -> list[str]:
    """Write the combined file; returns the summary lines to print."""
    ranks = [read_energy_file(p) for p in sorted(folder.glob("energy.*.csv"))]
    if not ranks:
        return ["Energy status: unavailable: no energy file was written"]
    devices = sorted({k for r in ranks for k in r if ":" in k})
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["nodename", "rank", *devices, "status"])
        for r in ranks:
            writer.writerow(
                [
                    r.get("nodename", ""),
                    r.get("rank", ""),
                    *(r.get(d, "") for d in devices),
                    r.get("status", ""),
                ]
            )
    lines = [f"Writing combined energy DataFrame to {output}"]
    bad = [r.get("status", "missing") for r in ranks if r.get("status") != "ok"]
    if bad or not devices:
        return [*lines, f"Energy status: {bad[0] if bad else 'unavailable: no device measured'}"]
    total = sum(float(v) for r in ranks for k, v in r.items() if ":" in k)
    count = sum(1 for r in ranks for k in r if ":" in k)
    seconds = max(float(r.get("seconds", 0)) for r in ranks)
    lines += ["Energy status: ok", f"Energy(Wh): {total:.6f}", f"Energy devices: {count}"]
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
