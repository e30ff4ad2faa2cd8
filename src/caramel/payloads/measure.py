"""Run a command while sampling power with a jpwr method; write jpwr-style power and energy files.

    python -m caramel.payloads.measure --method gh --interval 100 --out-dir DIR --suffix SYSTEM.0 --
    CMD ...

Why not jpwr's own sampler: when its sampling child fails (no NVML, no /sys/class/hwmon) the parent
waits on its queue forever. Here the meter is jpwr's method class (init/measure) driven by a thread
of ours: a failing meter ends the sampling with a status, the command runs and finishes anyway, and
the exit code is the command's. Window: samples are taken right before the command starts, every
interval, and right after it ends; the energy is the trapezoid integral over these samples, so it
covers the command's whole wall time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

METHODS = ("pynvml", "rocm", "gh", "gc")  # jpwr's meters: the energy_method values of system files
NO_METHOD = "none"  # a system that declares no meter
HWMON_BASE = "/sys/class/hwmon/"  # where jpwr's gh method reads (jpwr.sys.gh.power.hwmon_base)


def absent_meter(name: str, hwmon_base: str | None = None) -> str | None:
    """Why the meter of `name` cannot be on this node, found without importing jpwr (whose `gh` and
    `rocm` methods import pandas: most of the wrapper's start-up), or None where it may be."""
    if name == "gh":
        return _absent_hwmon(Path(hwmon_base or HWMON_BASE))
    if name == "rocm":
        rocm = Path(os.environ.get("ROCM_PATH") or "/opt/rocm")
        return None if rocm.is_dir() else f"no ROCm at {rocm} (ROCM_PATH)"
    return None


def _absent_hwmon(base: Path) -> str | None:
    """Why no Grace Hopper power meter is under `base` (where jpwr's gh reads), or None."""
    try:
        hwmons = list(base.iterdir())
    except OSError as error:
        return f"cannot read {base} ({error.strerror or error})"
    if not any((h / "device" / "power1_oem_info").is_file() for h in hwmons):
        return f"no power meter under {base} (no hwmon*/device/power1_oem_info)"
    return None


class PowerMeter(Protocol):
    """What caramel calls of jpwr's power classes (which ship no type information): `init` adds a
    series per device to `values`, `measure` appends one sample to each."""

    def init(self, values: dict[str, list[float]]) -> None: ...

    def measure(self, values: dict[str, list[float]]) -> None: ...


def load_method(name: str, hwmon_base: str | None = None) -> PowerMeter:
    """An instance of jpwr's power class for `name`; raises with the reason when it cannot load."""
    if name == NO_METHOD:  # systems/*.yaml `energy_method: none`
        raise RuntimeError("this system has no energy method")
    if name not in METHODS:
        raise ValueError(f"unknown energy method {name!r}; expected one of {', '.join(METHODS)}")
    absent = absent_meter(name, hwmon_base)
    if absent:
        raise RuntimeError(absent)
    try:
        power = _power_class(name)
    except Exception as error:  # jpwr missing, or its library (pynvml, rsmi, gcipuinfo) missing
        raise RuntimeError(
            f"jpwr method {name} cannot be loaded: {type(error).__name__}: {error}"
        ) from error
    found = power()
    if hwmon_base is not None:
        found.hwmon_base = (
            hwmon_base  # a fake sysfs tree for tests; jpwr reads it as a class attribute
        )
    meter: PowerMeter = found
    return meter


def _power_class(name: str) -> Any:
    """jpwr's power class of the method `name` (its module imported only when its meter is
    loaded)."""
    if name == "pynvml":
        from jpwr.gpu.pynvml import power
    elif name == "rocm":
        from jpwr.gpu.rocm import power
    elif name == "gh":
        from jpwr.sys.gh import power
    else:
        from jpwr.ipu.gc import power
    return power


class Sampler:
    """Samples a jpwr meter in a daemon thread; any meter error stops sampling and becomes
    `status`."""

    def __init__(self, meter: PowerMeter | None, interval_s: float) -> None:  # None: none loaded
        self.meter, self.interval_s = meter, interval_s
        self.values: dict[str, list[float]] = {"timestamps": []}
        self.status = "ok"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        try:
            if self.meter is None:
                raise RuntimeError("no meter")
            self.meter.init(self.values)
            if len(self.values) == 1:
                raise RuntimeError("the meter found no device")
            self.sample()
        except OSError as error:  # the usual case: the meter's files or device are not there
            self.status = (
                f"unavailable: cannot read {error.filename or 'the meter'} "
                f"({error.strerror or error})"
            )
            return
        except Exception as error:
            self.status = f"unavailable: {type(error).__name__}: {error}".replace("\n", " ")
            return
        self._thread.start()

    def sample(self) -> None:
        assert self.meter is not None, "sampled only after start found the meter"
        self.meter.measure(self.values)
        self.values["timestamps"].append(time.time())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception as error:
                self.status = f"failed during the run: {type(error).__name__}: {error}".replace(
                    "\n", " "
                )
                return

    def stop(self, timeout_s: float) -> None:
        self._stop.set()
        if not self._thread.is_alive() and not self._thread.ident:
            return
        self._thread.join(timeout_s)
        if (
            self._thread.is_alive()
        ):  # a meter read that hangs: give up on it, never on the benchmark
            self.status = f"failed: the meter did not answer within {timeout_s} s"
        elif self.status == "ok":
            try:
                self.sample()
            except Exception as error:
                self.status = f"failed at the end: {type(error).__name__}: {error}"

    def device_columns(self) -> list[str]:
        n = len(self.values["timestamps"])
        return [k for k, v in self.values.items() if k != "timestamps" and len(v) == n]


def integrate_wh(timestamps: list[float], watts: list[float]) -> float:
    """Trapezoid integral of power over time, in Wh."""
    pairs = zip(
        zip(timestamps, watts, strict=True),
        zip(timestamps[1:], watts[1:], strict=True),
        strict=False,
    )
    joules = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in pairs)
    return joules / 3600.0


def write_files(sampler: Sampler, out_dir: Path, suffix: str, rank: int) -> dict[str, float]:
    """power.<suffix>.csv and energy.<suffix>.csv as jpwr writes them; returns Wh per device."""
    out_dir.mkdir(parents=True, exist_ok=True)
    times = sampler.values["timestamps"]
    columns = sampler.device_columns() if sampler.status == "ok" else []
    rows = ["," + ",".join(["timestamps", *columns])]
    for i, t in enumerate(times if columns else []):
        rows.append(",".join([str(i), repr(t), *(repr(sampler.values[c][i]) for c in columns)]))
    (out_dir / f"power.{suffix}.csv").write_text("\n".join(rows) + "\n")
    energy = {c: integrate_wh(times, sampler.values[c]) for c in columns}
    lines = [
        ",0",
        *(f"{c},{wh!r}" for c, wh in energy.items()),
        f"nodename,{os.uname().nodename}",
        f"rank,{rank}",
        f"status,{sampler.status}",
        f"seconds,{times[-1] - times[0] if columns else 0}",
    ]
    (out_dir / f"energy.{suffix}.csv").write_text("\n".join(lines) + "\n")
    return energy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="run a command under a jpwr power meter, bounded in time"
    )
    parser.add_argument("--method", default="gh")
    parser.add_argument("--interval", type=int, default=100, help="sampling interval in ms")
    parser.add_argument("--out-dir", type=Path, default=Path("."))
    parser.add_argument("--suffix", default="0")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument(
        "--hwmon-base", default=None, help="root of a (fake) hwmon tree for the gh method"
    )
    parser.add_argument("--meter-timeout", type=float, default=10.0)
    # what follows `--` is the command, as caramel.adapters.backends.launchers.wrapped_command
    # parses it; not imported from there: the backends package costs this wrapper about 20 ms of
    # CPU, a third of its own
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    try:
        sampler = Sampler(load_method(args.method, args.hwmon_base), args.interval / 1000)
        sampler.start()
    except Exception as error:
        sampler = Sampler(None, 1.0)
        sampler.status = f"unavailable: {error}"
    returncode = subprocess.call(command)
    sampler.stop(args.meter_timeout)
    energy = write_files(sampler, args.out_dir, args.suffix, args.rank)
    print(f"caramel-energy: status {sampler.status}", file=sys.stderr, flush=True)
    if energy:
        print(
            f"caramel-energy: {sum(energy.values()):.6f} Wh over {len(energy)} devices",
            file=sys.stderr,
        )
    return returncode


if __name__ == "__main__":
    sys.exit(main())
