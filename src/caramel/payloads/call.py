"""What runs inside the job of a `call:` step: the function, and its figures written as JSON and
lines.

submitit runs a `CallPayload` in its job (its local subprocess or a SLURM job): the payload imports
the function, calls it with the keyword arguments it accepts, and writes `figures.json` (status,
figures or the exception's last line) and `figures.txt` (one `caramel-figure NAME = VALUE` line per
figure, what the step's patterns read). caramel reads only these two files, never the result
pickle submitit writes. Only the standard library is imported here (and submitit on a requeue), so
the job needs nothing caramel's submitting process has.

A function with a callable `checkpoint` attribute supports preemption: on submitit's timeout or
preemption signal the payload calls `function.checkpoint(**kwargs)` (it saves its state in the work
folder) and asks submitit to requeue the same call, which resumes from what it saved.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from caramel.payloads.measure import Sampler

from caramel.settings import current

FIGURE_PREFIX = (
    "caramel-figure"  # spec.call.FIGURE_PREFIX (not imported: the job needs only this module)
)


class BadReturn(Exception):
    """The function returned something that is not a mapping of names to numbers or texts."""


def resolve(target: str, home: str) -> Any:
    """The object `module:attr` names (a user's function, or a class with `checkpoint`: its type is
    the user's)."""
    module_name, _, attr = target.partition(":")
    if home and home not in sys.path:
        sys.path.insert(0, home)
    found: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        found = getattr(found, part)
    return found


def accepted(function: Callable[..., object], kwargs: dict[str, object]) -> dict[str, object]:
    """The keyword arguments `function` takes: those its signature names, or all with `**kwargs`."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return dict(kwargs)
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(kwargs)
    names = {
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return {k: v for k, v in kwargs.items() if k in names}


def figures_of(result: object, target: str) -> dict[str, object]:
    """The returned mapping, checked: names to numbers or texts."""
    if not isinstance(result, Mapping):
        raise BadReturn(
            f"{target} returned a {type(result).__name__}, not a mapping of figure names to "
            "numbers or texts"
        )
    out: dict[str, object] = {}
    for name, value in result.items():
        if not isinstance(name, str):
            raise BadReturn(f"{target} returned the key {name!r}: a figure name is a text")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise BadReturn(
                f"{target} returned {name}={value!r} (a {type(value).__name__}): a figure is a "
                "number or a text"
            )
        out[name] = value
    return out


def last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[-1].strip() if lines else ""
    return text if isinstance(exc, BadReturn) else f"{type(exc).__name__}: {text}".rstrip(": ")


class CallPayload:
    """One call of one workpackage (picklable by reference: submitit's job imports this module)."""

    def __init__(
        self,
        target: str,
        home: str,
        kwargs: dict[str, object],
        work: str,
        where: str = "",
        done_file: str = "",
        error_file: str = "",
        energy: str = "",
        system: str = "",
    ) -> None:
        self.target, self.home, self.kwargs, self.work, self.where = (
            target,
            home,
            kwargs,
            work,
            where,
        )
        self.done_file, self.error_file = done_file, error_file
        self.energy, self.system = (
            energy,
            system,
        )  # the system's energy method (jpwr's), and its name

    def __call__(self) -> int:
        os.chdir(self.work)
        try:
            function = resolve(self.target, self.home)
            with Energy(self.energy, self.work, self.system) as energy:
                result = function(**accepted(function, self.kwargs))
            figures = {**figures_of(result, self.target), **energy.figures}
        except (
            Exception
        ) as exc:  # a BaseException (submitit's requeue, an exit) is not the function failing
            self._write({"status": "failed", "error": last_line(exc), "where": self.where})
            _touch(self.error_file, last_line(exc))
            return 1
        self._write({"status": "done", "figures": figures})
        with open(os.path.join(self.work, "figures.txt"), "w") as handle:
            for name, value in figures.items():
                text = (
                    repr(value)
                    if isinstance(value, float) and not math.isfinite(value)
                    else str(value)
                )
                handle.write(f"{FIGURE_PREFIX} {name} = {' '.join(text.split())}\n")
        _touch(self.done_file)
        return 0

    def _write(self, record: dict[str, object]) -> None:
        path = os.path.join(self.work, "figures.json")
        with open(path + ".part", "w") as handle:
            json.dump(record, handle, indent=1, default=str)
        os.replace(path + ".part", path)


class Energy:
    """The function's energy, measured as the energy wrapper measures a command
    (caramel.payloads.measure): jpwr's meter of the system's method sampled while the function runs,
    the files in `energy/`, and two figures: `energy_wh` (all devices) and `energy_status` (`ok`, or
    why there is no figure)."""

    def __init__(self, method: str, work: str, system: str) -> None:
        self.method, self.work, self.system = method, work, system
        self.sampler: Sampler | None = None
        self.figures: dict[str, object] = {}

    def __enter__(self) -> Energy:
        if not self.method or self.method == "none":
            self.figures = {"energy_status": "unavailable: this system has no energy method"}
            return self
        from caramel.payloads.measure import Sampler, load_method

        try:
            # $CARAMEL_HWMON_BASE: a fake sysfs tree for the gh method (tests), as the wrapper's
            # --hwmon-base
            self.sampler = Sampler(load_method(self.method, current().hwmon_base or None), 0.1)
            self.sampler.start()
        except Exception as error:
            self.sampler = Sampler(None, 1.0)
            self.sampler.status = f"unavailable: {error}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.sampler is None:
            return
        from pathlib import Path

        from caramel.payloads.measure import write_files

        self.sampler.stop(10.0)
        wh = write_files(
            self.sampler, Path(self.work) / "energy", f"{self.system or 'local'}_power.0", 0
        )
        self.figures = {"energy_status": " ".join(str(self.sampler.status).split())}
        if wh:
            self.figures["energy_wh"] = sum(wh.values())


class CheckpointedCallPayload(CallPayload):
    """A call whose function can save its state: submitit requeues it on a timeout or a
    preemption."""

    def checkpoint(self) -> object:
        import submitit

        os.chdir(self.work)
        function = resolve(self.target, self.home)
        function.checkpoint(**accepted(function.checkpoint, self.kwargs))
        return submitit.helpers.DelayedSubmission(self)


def _touch(path: str, text: str = "") -> None:
    if path:
        with contextlib.suppress(OSError), open(path, "w") as handle:
            handle.write(text + "\n" if text else "")
