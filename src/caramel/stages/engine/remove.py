"""Removing a run, or single workpackages so that `bench continue` redoes them.

Removing a workpackage removes its dependants too (they used its results), as JUBE does; their
folders go, their state becomes `open`. When no workpackage of a step with a shared folder is left
started, the shared folder goes as well and its shared do's will run again.

Only what caramel made and can prove goes: the run's identity is checked first (state.identity: a
folder that merely holds a file named caramel.db is refused), removal waits for no one (another
bench holding the run's lock makes it an error), and every folder removed is a name the layout
checked inside the run folder (expand.layout); `shutil.rmtree` never follows a link out of it.
"""

from __future__ import annotations

import os
import shutil

from caramel.errors import RunError
from caramel.stages.engine.workdir import clean, shared_folder
from caramel.stages.expand import layout
from caramel.stages.spec.model import Step
from caramel.stages.state import identity, registry
from caramel.stages.state.lock import RunLock
from caramel.stages.state.rows import WpRow
from caramel.stages.state.store import Store, db_path
from caramel.vocabulary import WpState


def remove_run(run_dir: str) -> None:
    """Delete a whole run: its identity proven, while no other bench holds it."""
    identity.proven(run_dir)
    with RunLock(run_dir):
        identity.proven(run_dir)  # still the same run now that it is ours
        shutil.rmtree(run_dir)
    registry.forget(run_dir)


def remove_workpackages(run_dir: str, ids: list[int]) -> list[int]:
    """Reset `ids` and everything depending on them; returns the ids reset."""
    identity.proven(run_dir)
    with RunLock(run_dir):
        store = Store(db_path(run_dir))
        try:
            return _remove(store, run_dir, ids)
        finally:
            store.close()


def _remove(store: Store, run_dir: str, ids: list[int]) -> list[int]:
    wps = {wp.id: wp for wp in store.workpackages()}
    _check_known(run_dir, ids, wps)
    chosen = _with_dependants(ids, wps)
    # State first: if bench dies in between, an open workpackage's leftover folder is cleaned at its
    # start.
    with store.transaction():
        for wp_id in sorted(chosen):
            store.move(wps[wp_id], "remove", message="", reason="removed: will run again")
    model = store.model()
    for wp_id in sorted(chosen):
        clean(layout.wp_folder(run_dir, wps[wp_id].dirname))
    for step_name in {wps[i].step for i in chosen}:
        step = model.steps.get(step_name)
        if step is not None and step.shared and not _any_started(wps, step_name, chosen):
            _remove_shared(store, run_dir, step, min(i for i in chosen if wps[i].step == step_name))
    return sorted(chosen)


def _check_known(run_dir: str, ids: list[int], wps: dict[int, WpRow]) -> None:
    """A RunError naming the ids the run does not have, with the range it has."""
    unknown = [i for i in ids if i not in wps]
    if unknown:
        raise RunError(
            f"run {run_dir} has no workpackage {', '.join(map(str, unknown))}",
            hint=f"its workpackages are 0 to {max(wps) if wps else 0} (bench info lists them)",
        )


def _with_dependants(ids: list[int], wps: dict[int, WpRow]) -> set[int]:
    """`ids` and every workpackage that depends on one of them, however far down."""
    children: dict[int, list[int]] = {}
    for wp in wps.values():
        for parent in wp.parents:
            children.setdefault(parent, []).append(wp.id)
    todo, chosen = list(ids), set()
    while todo:
        wp_id = todo.pop()
        if wp_id not in chosen:
            chosen.add(wp_id)
            todo += children.get(wp_id, [])
    return chosen


def _any_started(wps: dict[int, WpRow], step_name: str, chosen: set[int]) -> bool:
    """Whether a workpackage of `step_name` that is not being removed has started (is not open)."""
    return any(
        wp.step == step_name and wp.id not in chosen and wp.state != WpState.OPEN
        for wp in wps.values()
    )


def _remove_shared(store: Store, run_dir: str, step: Step, member: int) -> None:
    """The shared folder of `step` (found through its workpackage `member`'s parameters) goes and
    its shared do's will run again."""
    located = shared_folder(run_dir, step, store.params(member))
    if located and os.path.isdir(located[1]):
        shutil.rmtree(located[1])
    with store.transaction():
        store.clear_shared(step.name)
