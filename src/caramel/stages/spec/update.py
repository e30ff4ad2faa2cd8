"""Edited definitions for a run made already, as JUBE's `jube result -u FILE` takes them.

    bench = updated(stored, edited)    # the run's model with the edited file's analysis definitions

What the update takes from the edited benchmark: its pattern sets, analysers and results (JUBE's
`update_analyse_and_result`) and, caramel's addition, the sanity checks of its steps. Everything
else stays as the run was made. A difference in what made the run (parameter, substitute or file
sets, a step's dos, uses or attributes) is refused, naming the first one found: the run is not made
again by an update, so taking it would describe a run that never happened. Line numbers and the
folder the edited file sits in do not count as differences.
"""

from __future__ import annotations

import copy
import itertools
import os
from dataclasses import asdict
from typing import Any

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec.model import Benchmark, Result

# The parts of a benchmark that made the run: (attribute, what an error calls one of them).
RUN_PARTS = (
    ("parametersets", "parameterset"),
    ("substitutesets", "substituteset"),
    ("filesets", "fileset"),
    ("steps", "step"),
)
_IGNORED = {"where", "base_dir", "sanity"}  # where a definition was written; sanity is analysis


def updated(stored: Benchmark, edited: Benchmark) -> Benchmark:
    """`stored` with the analysis definitions of `edited` (the same benchmark, edited)."""
    change, where = run_change(stored, edited)
    if change:
        raise SpecError(
            f"the edited file changes the run itself: {change}",
            where,
            hint="an update (-u) takes only patterns, analysers, results and sanity checks; "
            "to change the run, start a new one with bench run",
        )
    out = copy.copy(stored)
    out.patternsets = edited.patternsets
    out.analysers = edited.analysers
    out.results = [_result_at(result, edited.home, stored.home) for result in edited.results]
    out.steps = {name: copy.copy(step) for name, step in stored.steps.items()}
    for name, step in out.steps.items():
        step.sanity = list(edited.steps[name].sanity)
    return out


def run_change(stored: Benchmark, edited: Benchmark) -> tuple[str, Location]:
    """The first difference between the two in what made the run ('' when there is none), and where
    the edited file writes it."""
    for attr, what in RUN_PARTS:
        change = _part_change(what, getattr(stored, attr), getattr(edited, attr), edited.where)
        if change is not None:
            return change
    return "", edited.where


def _part_change(
    what: str, old: dict[str, Any], new: dict[str, Any], gone_where: Location
) -> tuple[str, Location] | None:
    """The first of one kind of parts (parametersets, steps...) that is gone, new or differs."""
    for name in _names(old, new):
        if name not in new:
            return f"{what} '{name}' is gone", gone_where
        if name not in old:
            return f"{what} '{name}' is new", new[name].where
        difference = _difference(asdict(old[name]), asdict(new[name]))
        if difference:
            return f"{what} '{name}' differs in its {difference}", new[name].where
    return None


def _names(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The parts' names: the stored ones, then the new ones."""
    return list(old) + [n for n in new if n not in old]


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The first field in which a part differs, and how ('' when it does not)."""
    before, after = _plain(old), _plain(new)
    if before == after:
        return ""
    field: str = next(k for k in after if before.get(k) != after.get(k))
    return field + _which(before[field], after[field])


def _which(before: object, after: object) -> str:
    """For a list of named parts (parameters, dos), which one differs and in what."""
    if not (isinstance(before, list) and isinstance(after, list)):
        return f": {before!r} became {after!r}" if len(repr(before) + repr(after)) < 120 else ""
    return _which_part(before, after)


def _which_part(before: list[Any], after: list[Any]) -> str:
    """The first part of the edited list that differs from the stored one's at its place."""
    pairs = itertools.zip_longest(after, before[: len(after)])
    for index, (item, old) in enumerate(pairs):
        if old != item and isinstance(item, dict):
            label = f"'{item['name']}'" if item.get("name") else f"{index + 1}"
            return f": {label}{_detail(old, item)}"
    return f": {len(before)} became {len(after)}"


def _detail(old: Any, item: dict[str, Any]) -> str:
    """What differs in a part: its first changed field, or (new)."""
    if not old:
        return " (new)"
    field = next((k for k in item if old.get(k) != item.get(k)), "")
    return f" ({field}: {old.get(field)!r} became {item.get(field)!r})" if field else " (new)"


def _plain(data: Any) -> Any:
    """Encoded model data without where each part was written (nor the fileset's base folder)."""
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items() if k not in _IGNORED}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    return data


def _result_at(result: Result, edited_home: str, stored_home: str) -> Result:
    """A relative result_dir= is relative to the edited file's folder, as JUBE places it."""
    if (
        not result.result_dir
        or os.path.isabs(os.path.expanduser(result.result_dir))
        or edited_home == stored_home
    ):
        return result
    moved = copy.copy(result)
    moved.result_dir = os.path.join(edited_home, result.result_dir)
    return moved


def no_benchmark(path: str, name: str, names: list[str]) -> SpecError:
    return SpecError(
        f"the edited file has no benchmark named '{name}' (the run's benchmark)",
        Location(path),
        hint=did_you_mean(name, names) or "its benchmarks: " + (", ".join(names) or "none"),
    )
