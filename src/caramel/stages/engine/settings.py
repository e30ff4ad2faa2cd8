"""What a run is told (Settings, stored with the run) and what it tells at the end (Summary)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any  # the settings' JSON form (stored with the run)

from caramel.stages.spec.model import Benchmark, Step


@dataclass
class Settings:
    """Per-run settings, stored with the run (`bench continue` may change them)."""

    timeout: float | None = None  # seconds a workpackage may wait for its done file
    time_limit: float | None = (
        None  # `--time-limit`: seconds a step's do's may run, over the file's (0: none)
    )
    # `--repeat auto`: its rule (engine.rounds.AutoRepeat), then the repeats made and why no more
    repeat_auto: dict[str, Any] | None = None
    # `-e` (JUBE's exit on error): after a workpackage fails, no open one starts in this bench
    # (the running ones finish). An option of the command, as in JUBE: never stored with the run.
    stop_after_failure: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        return cls(
            timeout=data.get("timeout"),
            time_limit=data.get("time_limit"),
            repeat_auto=data.get("repeat_auto"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"timeout": self.timeout, "time_limit": self.time_limit}
        if self.repeat_auto is not None:
            out["repeat_auto"] = self.repeat_auto
        return out

    def limit_for(self, bench: Benchmark, step: Step) -> float:
        """The time limit of `step`'s do's: --time-limit, else the step's, else the benchmark's
        metadata."""
        return time_limit(bench, step, self.time_limit)


def time_limit(bench: Benchmark, step: Step, override: float | None = None) -> float:
    """Seconds `step`'s do's may run (0: no limit): the override, the step's `timeout`, the
    metadata's."""
    for value in (override, step.timeout, bench.meta.time_limit):
        if value is not None:
            return float(value)
    return 0.0


@dataclass
class Summary:
    run_dir: str
    run_id: int
    benchmark: str
    counts: dict[str, dict[str, int]]
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # id, step, reason
    waiting: list[tuple[int, str, str]] = field(default_factory=list)
    repeats: str = ""  # `--repeat auto`: how many repeats ran and why no more (engine.rounds)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed or any(c.get("cancelled") for c in self.counts.values()) else 0
