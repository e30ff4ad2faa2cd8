"""caramel additions on a step: a time limit (`timeout`), parallel copies (`copies`) and their
result (`copies_aggregate`); on a benchmark, how often `bench run` repeats it (`repeat`).

A time limit is seconds (`90`, `1.5`), `MM:SS`, `HH:MM:SS` or `D-HH:MM:SS`; `0` means none. `copies`
is a count of at least 1 or `all` (one copy per device of the system).
"""

from __future__ import annotations

from caramel.errors import Location, SpecError
from caramel.stages.spec import meta
from caramel.stages.spec.model import Repeat
from caramel.vocabulary import COPY_AGGREGATES, plain_bool


def parse_duration(text: str, what: str, where: Location | None = None) -> float:
    """Seconds of `text` (the meta block's duration syntax: seconds, MM:SS, HH:MM:SS, D-HH:MM:SS);
    a SpecError naming `what` and the place when malformed."""
    try:
        return meta.parse_duration(text)
    except ValueError:
        raise SpecError(
            f"{what} {text!r} is not a time limit",
            where,
            hint="expected seconds (90) or HH:MM:SS (01:30:00); 0 means no limit",
        ) from None


def parse_copies(text: str, where: Location | None = None) -> str:
    """`copies` as written, checked: a whole number of at least 1, or `all`."""
    value = text.strip().lower()
    if value == "all":
        return value
    if value.isdigit() and int(value) >= 1:
        return str(int(value))
    raise SpecError(
        f"copies={text!r} is neither a whole number of at least 1 nor 'all'",
        where,
        hint="expected copies: 2 (two copies of each workpackage at once) or copies: "
        "all (one per device)",
    )


def parse_repeat(text: str, where: Location | None = None, what: str = "repeat") -> Repeat:
    """`repeat` as written (a benchmark's attribute, or `--repeat`), checked: a whole number of
    at least 1, or `auto` (until the figures converge)."""
    value = str(text).strip().lower()
    if value == "auto":
        return Repeat(auto=True)
    if value.isdecimal() and int(value) >= 1:
        return Repeat(times=int(value))
    raise SpecError(
        f"{what}={text!r} is neither a whole number of at least 1 nor 'auto'",
        where,
        hint="expected repeat: 3 (every workpackage three times) or repeat: auto "
        "(until the figures' 95 % intervals are within the target; docs/cli.md)",
    )


def parse_copies_aggregate(text: str, where: Location | None = None) -> str:
    """`copies_aggregate`: what a benchmark's result over its copies is (`sum`: the node's
    throughput, `mean`: per device, as the Mila suite reports)."""
    value = text.strip().lower()
    if value in COPY_AGGREGATES:
        return value
    raise SpecError(
        f"copies_aggregate={text!r} is neither " + " nor ".join(COPY_AGGREGATES),
        where,
        hint="expected copies_aggregate: sum (the node's throughput, the default) or "
        "copies_aggregate: mean (per copy, as the Mila suite reports)",
    )


def array_setting(text: str) -> str | None:
    """`array` as caramel keeps it: "false", "true" or "N" (at most N tasks at once); None when
    malformed."""
    value = str(text).strip().lower()
    if value.isdecimal() and int(value) >= 1:
        return str(int(value))
    flag = plain_bool(value) if value else None
    return None if flag is None else ("true" if flag else "false")


def parse_array(text: str, submitted: bool, where: Location | None = None) -> str:
    """`array` of a step: its workpackages become one job array (`true`), at most N of them running
    at once (`N`), or one job each (`false`). Only a step whose do's form a job (`submit: true`) or
    that calls a function (`call:`, one batch of submitit on SLURM) has one."""
    value = array_setting(text)
    if value is None:
        raise SpecError(
            f"array={text!r} is neither true, false nor a whole number of at least 1",
            where,
            hint="expected array: true (one job array for the step's workpackages) or array: 4 "
            "(at most 4 of its tasks run at once)",
        )
    if value != "false" and not submitted:
        raise SpecError(
            "array= on a step that is not submitted: only the workpackages of a submit step "
            "form a job array",
            where,
            hint="add submit: true to the step (its do's become one job script), or remove array= "
            "(a call: step may have one too)",
        )
    return value
