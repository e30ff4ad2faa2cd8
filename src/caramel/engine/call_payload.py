"""What runs inside the job of a `call:` step: the function, and its figures written as JSON and lines.

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
from collections.abc import Mapping

FIGURE_PREFIX = "caramel-figure"  # spec.call.FIGURE_PREFIX (not imported: the job needs only this module)


class BadReturn(Exception):
    """The function returned something that is not a mapping of names to numbers or texts."""


def resolve(target: str, home: str) -> object:
    module_name, _, attr = target.partition(":")
    if home and home not in sys.path:
        sys.path.insert(0, home)
    found: object = importlib.import_module(module_name)
    for part in attr.split("."):
        found = getattr(found, part)
    return found


def accepted(function: object, kwargs: dict[str, object]) -> dict[str, object]:
    """The keyword arguments `function` takes: those its signature names, or all with `**kwargs`."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return dict(kwargs)
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(kwargs)
    names = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    return {k: v for k, v in kwargs.items() if k in names}


def figures_of(result: object, target: str) -> dict[str, object]:
    """The returned mapping, checked: names to numbers or texts."""
    if not isinstance(result, Mapping):
        raise BadReturn(f"{target} returned a {type(result).__name__}, not a mapping of figure names to "
                        "numbers or texts")
    out: dict[str, object] = {}
    for name, value in result.items():
        if not isinstance(name, str):
            raise BadReturn(f"{target} returned the key {name!r}: a figure name is a text")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise BadReturn(f"{target} returned {name}={value!r} (a {type(value).__name__}): a figure is a "
                            "number or a text")
        out[name] = value
    return out


def last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[-1].strip() if lines else ""
    return text if isinstance(exc, BadReturn) else f"{type(exc).__name__}: {text}".rstrip(": ")


class CallPayload:
    """One call of one workpackage (picklable by reference: submitit's job imports this module)."""

    def __init__(self, target: str, home: str, kwargs: dict[str, object], work: str, where: str = "",
                 done_file: str = "", error_file: str = "") -> None:
        self.target, self.home, self.kwargs, self.work, self.where = target, home, kwargs, work, where
        self.done_file, self.error_file = done_file, error_file

    def __call__(self) -> int:
        os.chdir(self.work)
        try:
            function = resolve(self.target, self.home)
            figures = figures_of(function(**accepted(function, self.kwargs)), self.target)  # type: ignore[operator]
        except Exception as exc:  # a BaseException (submitit's requeue, an exit) is not the function failing
            self._write({"status": "failed", "error": last_line(exc), "where": self.where})
            _touch(self.error_file, last_line(exc))
            return 1
        self._write({"status": "done", "figures": figures})
        with open(os.path.join(self.work, "figures.txt"), "w") as handle:
            for name, value in figures.items():
                text = repr(value) if isinstance(value, float) and not math.isfinite(value) else str(value)
                handle.write(f"{FIGURE_PREFIX} {name} = {' '.join(text.split())}\n")
        _touch(self.done_file)
        return 0

    def _write(self, record: dict) -> None:
        path = os.path.join(self.work, "figures.json")
        with open(path + ".part", "w") as handle:
            json.dump(record, handle, indent=1, default=str)
        os.replace(path + ".part", path)


class CheckpointedCallPayload(CallPayload):
    """A call whose function can save its state: submitit requeues it on a timeout or a preemption."""

    def checkpoint(self) -> object:
        import submitit

        os.chdir(self.work)
        function = resolve(self.target, self.home)
        function.checkpoint(**accepted(function.checkpoint, self.kwargs))  # type: ignore[attr-defined]
        return submitit.helpers.DelayedSubmission(self)


def _touch(path: str, text: str = "") -> None:
    if path:
        with contextlib.suppress(OSError), open(path, "w") as handle:
            handle.write(text + "\n" if text else "")
