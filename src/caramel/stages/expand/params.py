"""A workpackage's parameter values ("params"), typed once: what the plan records and every later
stage reads.

    params = wp.params()               # the plan's record of one workpackage
    params["nodes"]                    # "4": the final text, as substitution uses it
    params.type_of("nodes")            # "int": its declared type (the one place types are decided)
    params.typed("nodes")              # 4
    params.at_cycle(2)                 # the texts of cycle 2 (`update_mode="cycle"`/`always`
    values)

The run stores them (state.store) when it starts; the engine, the analysis, the tables, the history
and the notebook API read them from there and never evaluate a definition again nor guess a type
from a parameter's name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from caramel.stages.expand.builtins import BUILTINS
from caramel.stages.spec.model import Parameter

TYPES = ("int", "float")  # declared types that convert; every other one is text (as JUBE does)
STRING = "string"


def declared_type(param: Parameter) -> str:
    """A parameter's type: "int", "float" or "string" (any other declared name is text in JUBE)."""
    return param.type if param.type in TYPES else STRING


def to_type(text: str, type_: str) -> int | float | str:
    """JUBE's convert_type without stopping: a value that does not convert stays text."""
    try:
        if type_ == "int":
            return math.nan if text == "nan" else int(float(text))
        if type_ == "float":
            return float(text)
    except (ValueError, OverflowError):
        return text
    return text


class Params(dict[str, str]):
    """Final parameter texts by name (a dict, so substitution takes it as it is), with the declared
    type of each value that is not text and, per later cycle, the texts that change in it."""

    __slots__ = ("types", "cycles")

    def __init__(
        self,
        texts: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        types: dict[str, str] | None = None,
        cycles: tuple[dict[str, str], ...] = (),
    ) -> None:
        super().__init__(texts)
        self.types: dict[str, str] = types if types is not None else {}  # name -> "int" | "float"
        self.cycles: tuple[dict[str, str], ...] = cycles  # cycles[c - 1]: the texts cycle c changes

    def type_of(self, name: str) -> str:
        return self.types.get(name, STRING)

    def typed(self, name: str) -> int | float | str:
        """The value of `name` as its declared type (JUBE's convert_type)."""
        text = self[name]
        kind = self.types.get(name)
        return text if kind is None else to_type(text, kind)

    def typed_values(self, builtin: bool = False) -> dict[str, object]:
        """Every value as its declared type (the `jube_*` and caramel built-ins: with `builtin`)."""
        return {
            name: self.typed(name)
            for name in self
            if builtin or not (name.startswith("jube_") or name in BUILTINS)
        }

    def at_cycle(self, cycle: int) -> Params:
        """The params of cycle `cycle`: `jube_wp_cycle` and the values recorded for that cycle."""
        if cycle == 0:
            return self
        out = Params(self, self.types, self.cycles)
        if cycle <= len(self.cycles):
            out.update(self.cycles[cycle - 1])
        out["jube_wp_cycle"] = str(cycle)
        return out

    def stripped(self) -> Params:
        """The texts as JUBE's analysis sees them: `jube result` reloads the workpackages from
        workpackages.xml, which strips every value (a shell parameter's trailing newline is
        gone)."""
        return Params({name: text.strip() for name, text in self.items()}, self.types, self.cycles)
