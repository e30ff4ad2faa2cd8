"""`bench run --repeat auto`: a run planned for its most repeats, run one repeat at a time.

The plan holds every workpackage of `--repeat-max` repeats (each step's iterations times that, as
`--repeat N` makes them), so the workpackage ids and folders are those of a fixed run. The engine
holds back the workpackages of later repeats (Engine.hold); after each repeat ends, the caller's
`go_on` judges the figures so far and says whether one more repeat runs. When it says no, the
workpackages of the repeats not run, which never started, are taken out of the run and its stored
model says how many repeats it made: the run then reads like one made with `--repeat N`.

A repeat of a workpackage is its own repeat (its iteration over the file's iterations) or, when
later, its parents': the workpackages of a step after a repeated one belong to the later repeat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any  # the rule's JSON form (engine.settings)

from caramel.errors import RunError
from caramel.stages.engine.settings import Summary
from caramel.stages.spec.model import Step
from caramel.vocabulary import WpState

if TYPE_CHECKING:
    from caramel.stages.engine.interface import EngineInterface
    from caramel.stages.state.rows import WpRow

# after `done` repeats: None for one more, else why the run stops there (recorded with the run)
GoOn = Callable[[Summary, int], "str | None"]
SETTING = (
    "repeat_auto"  # the run's settings: the rule, and once it stopped, the repeats made and why
)


@dataclass(frozen=True)
class AutoRepeat:
    """When `--repeat auto` stops (docs/cli.md): every figure's 95 % interval within
    `target_pct` % of its mean after at least `minimum` repeats, or `maximum` repeats, or
    `seconds` since the start."""

    target_pct: float = 2.0
    minimum: int = 3
    maximum: int = 30
    seconds: float | None = None

    def __post_init__(self) -> None:
        if not self.target_pct > 0:
            raise RunError(f"--repeat-target {self.target_pct:g}: expected a percentage above 0")
        if not 2 <= self.minimum <= self.maximum:
            raise RunError(
                f"--repeat-min {self.minimum} --repeat-max {self.maximum}: expected "
                "2 <= minimum <= maximum (an interval needs two repeats)"
            )
        if self.seconds is not None and not self.seconds > 0:
            raise RunError(f"--repeat-time {self.seconds:g}: expected seconds above 0")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AutoRepeat:
        return cls(*(data.get(f.name, f.default) for f in dataclasses.fields(cls)))


def check_steps(steps: Mapping[str, Step]) -> None:
    """Refuse a step whose do's wait for all its workpackages (a shared do): held-back repeats would
    keep it from running until the last repeat."""
    for step in steps.values():
        if any(do.shared for do in step.dos):
            raise RunError(
                f"--repeat auto: step '{step.name}' has a shared do, which runs once all its "
                "workpackages are done",
                step.where,
                hint="run it with --repeat N (a fixed number of repeats)",
            )


def repeat_of(wps: Mapping[int, WpRow], steps: Mapping[str, Step]) -> dict[int, int]:
    """The repeat (from 0) each workpackage belongs to (parents come before their children in
    id order)."""
    out: dict[int, int] = {}
    for wp_id in sorted(wps):
        wp = wps[wp_id]
        step = steps[wp.step]
        per_repeat = max(1, step.iterations // max(1, step.repeats))  # the file's own iterations
        own = (wp.iteration % step.iterations) // per_repeat
        out[wp_id] = max([own, *(out.get(parent, 0) for parent in wp.parents)])
    return out


def run_repeats(engine: EngineInterface, go_on: GoOn) -> Summary:
    """Run `engine` a repeat at a time until `go_on` says stop, or the planned repeats are
    done. A run left with workpackages waiting (a job in a queue) stops here as it is: `bench
    continue` goes on."""
    repeat = repeat_of(engine.wps, engine.bench.steps)
    planned = max(repeat.values(), default=0) + 1
    current = max(
        (repeat[i] for i, wp in engine.wps.items() if wp.attempt), default=0
    )  # started ones
    engine.hold = lambda wp: repeat[wp.id] > current
    while True:
        summary = engine.run()
        if summary.waiting:
            return summary
        stopped = go_on(summary, current + 1)
        if stopped is not None or current + 1 >= planned:
            break
        current += 1
    engine.hold = None
    why = stopped or f"the {planned} planned repeats ran"
    with engine.store.transaction():
        _drop_later(engine, repeat, current + 1, planned, why)
        settings = dict(engine.info.settings)
        settings[SETTING] = dict(settings.get(SETTING) or {}, repeats=current + 1, stopped=why)
        engine.store.update_settings(settings)
        engine.store.event(
            None, "repeat", f"--repeat auto: {current + 1} of at most {planned} repeats; {why}"
        )
    summary = engine.summary()
    summary.repeats = f"{current + 1} repeat{'s' if current else ''} (--repeat auto): {why}"
    return summary


def _drop_later(
    engine: EngineInterface, repeat: dict[int, int], made: int, planned: int, why: str
) -> None:
    """The run after `made` of `planned` repeats: the later ones' workpackages out, the
    model's steps with the iterations and repeats that ran (call inside a transaction)."""
    if made >= planned:
        return
    later = [
        wp_id
        for wp_id, wp in engine.wps.items()
        if repeat[wp_id] >= made and wp.state == WpState.OPEN and not wp.attempt
    ]
    model = dataclasses.replace(
        engine.bench,
        steps={
            name: dataclasses.replace(
                step, iterations=step.iterations // step.repeats * made, repeats=made
            )
            for name, step in engine.bench.steps.items()
        },
    )
    engine.store.drop_unstarted(
        later, f"--repeat auto stopped after {made} of {planned} repeats ({why})"
    )
    engine.store.replace_model(model)
    for wp_id in later:
        del engine.wps[wp_id]
    engine.bench = model
