"""The CPU layout a node was measured to favour (`bench layout --measure`), kept in caramel's data
folder.

One JSON file, `cpu-layout.json` in the per-user data folder (`caramel.settings`:
$CARAMEL_DATA_DIR), one measurement per trainer ("gpt", "resnet"):

    {"format": "caramel cpu layout", "version": 1, "measurements": [
      {"workload": "gpt", "layout": "2x1", "unit": "tokens/s", "date": "2026-11-25T05:40:00+00:00",
       "host": "node17", "cpus": "0-1", "torch": "2.5.1", "shape": "--num-layers 2 ...",
       "iterations": 20, "repeats": 3, "seconds": 41.2,
       "figures": {"1x1": [19010.0, ...], "1x2": [...], "2x1": [...]}}]}

`figures` holds every timed repeat of every candidate (throughput, `unit`); `layout` is the one with
the best median. A measurement holds for the node it was taken on: the same host name, the same
usable CPUs, the same torch version, and at most `MAX_AGE_DAYS` old (`matches`); any other is
ignored and the rule decides. A file that cannot be read or decoded is a warning naming it, never a
traceback.

Torch-free, and cheap when no file exists: `bench run` plans llm.yaml through
`layout.node_layout()`.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

FILE_NAME = "cpu-layout.json"
FORMAT = "caramel cpu layout"
VERSION = 1
# The unit is shown in the layout's summary, which a benchmark passes to its trainer on a shell
# command line (llm.yaml `--layout-choice '...'`): a stored file is data, so its unit may hold no
# quote, `$` or other shell syntax, only what a throughput unit is written with.
UNIT_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9/ ._-]{0,31}")
MAX_AGE_DAYS = (
    90  # a node's kernel, BLAS or caramel's trainers change: measure again after a season
)


class StoredLayoutError(ValueError):
    """The stored file is not what this module writes: says which field and why."""


@dataclass(frozen=True)
class NodeIdentity:
    """What a measurement holds for: the host, its usable CPUs (a cpulist: `0-3,8`), torch's
    version."""

    host: str
    cpus: str
    torch: str

    @classmethod
    def here(cls, cpus: set[int]) -> NodeIdentity:
        return cls(
            os.uname().nodename, cpulist(cpus), torch_version()
        )  # the host name the run lock and history use


@dataclass(frozen=True)
class Measurement:
    workload: str  # the trainer: "gpt" or "resnet"
    layout: str  # the winner, PxT
    unit: str  # of the figures: tokens/s, images/s
    date: datetime  # when it was measured (timezone-aware)
    node: NodeIdentity
    shape: str  # the trainer's arguments it was measured with
    iterations: int  # timed iterations per run
    repeats: int  # runs per candidate
    seconds: float  # what the whole probe took
    figures: dict[str, list[float]] = field(default_factory=dict)  # PxT: throughput of each repeat

    def median(self, layout: str) -> float:
        return median(self.figures[layout])

    def runner_up(self) -> str | None:
        """The best candidate after the winner (None where only one was measured)."""
        others = [name for name in self.figures if name != self.layout]
        return max(others, key=self.median) if others else None

    def summary(self) -> str:
        """`measured 2026-11-25: 2x1 19.5k vs 1x2 17.2k tokens/s`: the winner's median against the
        next best."""
        text = (
            f"measured {self.date.date().isoformat()}: {self.layout} "
            f"{kilo(self.median(self.layout))}"
        )
        second = self.runner_up()
        if second is not None:
            text += f" vs {second} {kilo(self.median(second))}"
        return f"{text} {self.unit}"

    def matches(self, node: NodeIdentity, now: datetime | None = None) -> str:
        """ "" where this measurement holds for `node` now, else why it does not (stale)."""
        for what, stored, here in (
            ("host", self.node.host, node.host),
            ("usable CPUs", self.node.cpus, node.cpus),
            ("torch", self.node.torch, node.torch),
        ):
            if stored != here:
                return f"measured for {what} {stored!r}, this is {here!r}"
        age = (now or datetime.now(timezone.utc)) - self.date
        if age > timedelta(days=MAX_AGE_DAYS):
            return f"measured {age.days} days ago (older than {MAX_AGE_DAYS})"
        return ""


def median(values: list[float]) -> float:
    """The median (not `statistics.median`: its import costs a plan about 10 ms,
    perf/bench_cpu.py)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def kilo(value: float) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


def cpulist(cpus: set[int]) -> str:
    """`{0, 1, 2, 3, 8}` as the kernel writes it: `0-3,8`."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def torch_version() -> str:
    """torch's installed version from its metadata (never importing torch); "" where it is not
    installed."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


def store_path(data_dir: str) -> str:
    return os.path.join(data_dir, FILE_NAME)


# ---- the file ----


def encode(measurements: list[Measurement]) -> str:
    def one(m: Measurement) -> dict[str, object]:
        return {
            "workload": m.workload,
            "layout": m.layout,
            "unit": m.unit,
            "date": m.date.isoformat(),
            "host": m.node.host,
            "cpus": m.node.cpus,
            "torch": m.node.torch,
            "shape": m.shape,
            "iterations": m.iterations,
            "repeats": m.repeats,
            "seconds": round(m.seconds, 3),
            "figures": {name: [round(v, 3) for v in values] for name, values in m.figures.items()},
        }

    return (
        json.dumps(
            {"format": FORMAT, "version": VERSION, "measurements": [one(m) for m in measurements]},
            indent=1,
        )
        + "\n"
    )


def decode(text: str) -> list[Measurement]:
    """The measurements of a stored file; StoredLayoutError (which field, why) for anything else."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise StoredLayoutError(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoredLayoutError(f'not a caramel layout file (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise StoredLayoutError(f"version {data.get('version')!r}, this caramel reads {VERSION}")
    entries = data.get("measurements")
    if not isinstance(entries, list):
        raise StoredLayoutError('"measurements" is not a list')
    return [_measurement(entry, i) for i, entry in enumerate(entries)]


def _measurement(entry: object, index: int) -> Measurement:
    where = f"measurement {index + 1}"
    if not isinstance(entry, dict):
        raise StoredLayoutError(f"{where} is not an object")

    def text(key: str) -> str:
        value = entry.get(key)
        if not isinstance(value, str):
            raise StoredLayoutError(f"{where}: {key!r} is not text")
        return value

    def number(key: str, kind: type) -> float:
        value = entry.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float) if kind is float else int)
            or not math.isfinite(value)
            or value < 0
        ):
            raise StoredLayoutError(
                f"{where}: {key!r} is not a {'number' if kind is float else 'count'} >= 0"
            )
        return value

    try:
        date = datetime.fromisoformat(text("date"))
    except ValueError:
        raise StoredLayoutError(f"{where}: 'date' is not an ISO date") from None
    if date.tzinfo is None:
        raise StoredLayoutError(f"{where}: 'date' has no time zone")
    figures = _figures(entry.get("figures"), where)
    layout = _layout_name(text("layout"), f"{where}: 'layout'")
    if layout not in figures:
        raise StoredLayoutError(f"{where}: the winner {layout} has no figures")
    unit = text("unit")
    if not UNIT_PATTERN.fullmatch(unit):
        raise StoredLayoutError(
            f"{where}: 'unit' {unit[:40]!r} is not a unit (letters, digits, '/', ' ', '.', "
            "'_', '-')"
        )
    return Measurement(
        text("workload"),
        layout,
        unit,
        date,
        NodeIdentity(text("host"), text("cpus"), text("torch")),
        text("shape"),
        int(number("iterations", int)),
        int(number("repeats", int)),
        float(number("seconds", float)),
        figures,
    )


def _figures(value: object, where: str) -> dict[str, list[float]]:
    if not isinstance(value, dict) or not value:
        raise StoredLayoutError(f"{where}: 'figures' is not a non-empty object")
    figures: dict[str, list[float]] = {}
    for name, samples in value.items():
        layout = _layout_name(name, f"{where}: figures")
        if not _positive_numbers(samples):
            raise StoredLayoutError(f"{where}: figures of {name}: not a list of positive numbers")
        figures[layout] = [float(s) for s in samples]
    return figures


def _positive_numbers(samples: object) -> bool:
    """Whether stored samples are a non-empty list of finite numbers above 0."""
    return isinstance(samples, list) and bool(samples) and all(map(_positive, samples))


def _positive(sample: object) -> bool:
    """Whether a stored sample is a finite number above 0 (JSON's true and false are not)."""
    if isinstance(sample, bool) or not isinstance(sample, (int, float)):
        return False
    return math.isfinite(sample) and sample > 0


def _layout_name(text: str, where: str) -> str:
    processes, _, threads = text.partition("x")
    if not (processes.isdigit() and threads.isdigit() and int(processes) > 0 and int(threads) > 0):
        raise StoredLayoutError(f"{where}: {text!r} is not PROCESSESxTHREADS")
    return f"{int(processes)}x{int(threads)}"


_warned: set[str] = (
    set()
)  # one warning per problem and process: a plan reads the file once per trainer


def note(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        print(text, file=sys.stderr)


def read(path: str) -> list[Measurement]:
    """The measurements stored at `path`; none where there is no file. A file that cannot be read or
    decoded: a warning naming it, and none (the rule decides; `bench layout --measure` writes it
    anew)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        note(
            f"warning: the stored CPU layout {path} cannot be read ({exc}); the layout rule decides"
        )
        return []
    try:
        return decode(text)
    except StoredLayoutError as exc:
        note(
            f"warning: the stored CPU layout {path} is damaged ({exc}); ignored, "
            "the layout rule decides (`bench layout --measure` writes it anew)"
        )
        return []


def save(path: str, measurement: Measurement) -> str:
    """Store `measurement`, replacing the one of its workload (the file written whole, never through
    a link: caramel.fs.writes). A damaged file is replaced."""
    from caramel.fs.writes import write_text

    kept = [m for m in read(path) if m.workload != measurement.workload]
    return write_text(path, encode([*kept, measurement]))
