"""Reading attributes and children of a benchmark file's elements, with errors that name the place.

Unknown attributes are ignored, as JUBE ignores them (CARAML writes `seperator`); unknown elements
and bad values are errors naming file, line and what was expected.
"""

from __future__ import annotations

import re
import sys

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec import model as m
from caramel.stages.spec.tree import Node
from caramel.vocabulary import plain_bool

NAME_RE = re.compile(r"^[^\d\W]\w*$")


def boolean(node: Node, attr: str, default: bool) -> bool:
    """A boolean attribute (true/false, yes/no, 1/0; empty is false), `default` when absent."""
    value = node.attrs.get(attr)
    if value is None:
        return default
    plain = plain_bool(value) if value.strip() else False
    if plain is not None:
        return plain
    raise SpecError(
        f"{attr}={value!r} on <{node.tag}> is not a boolean",
        node.where,
        hint="expected true or false",
    )


def whole_number(node: Node, attr: str, default: int) -> int:
    """A whole-number attribute, `default` when absent or empty."""
    value = node.attrs.get(attr)
    if value is None or not value.strip():
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise SpecError(
            f"{attr}={value!r} on <{node.tag}> is not a whole number",
            node.where,
            hint=f'expected digits, e.g. {attr}="2"',
        ) from None


def choice(node: Node, attr: str, default: str, allowed: tuple[str, ...]) -> str:
    """An attribute that must be one of `allowed`."""
    value = node.attrs.get(attr, default).strip()
    if value not in allowed:
        hint = did_you_mean(value, allowed) or "expected one of: " + ", ".join(allowed)
        raise SpecError(
            f"{attr}={value!r} on <{node.tag} name={node.attrs.get('name', '')!r}> is not allowed",
            node.where,
            hint=hint,
        )
    return value


def name_of(node: Node, what: str | None = None) -> str:
    """The name= an element must have."""
    name = node.attrs.get("name", "").strip()
    if not name:
        raise SpecError(
            f"<{what or node.tag}> needs a name",
            node.where,
            hint=f'write <{node.tag} name="..."> (YAML: name: ...)',
        )
    return name


def type_of(node: Node, what: str, name: str) -> str:
    """The type= of a parameter or pattern; any other name is a string, as JUBE treats it (with a
    warning)."""
    ptype = node.attrs.get("type", "string").strip()
    if ptype in m.PARAMETER_TYPES:
        return ptype
    hint = did_you_mean(ptype, m.PARAMETER_TYPES)
    print(
        f"warning: {node.where}: type={ptype!r} of {what} '{name}' is not int, float or string; "
        "treated as a string, as JUBE does" + (f" ({hint})" if hint else ""),
        file=sys.stderr,
    )
    return "string"


def file_name(name: str, what: str, folder: str, where: Location) -> str:
    """A name that becomes a file or folder name must stay inside `folder`: no separator, no
    `..`."""
    bad = next((part for part in ("/", "\\", "..", "\0") if part in name), None)
    if bad is not None or name == ".":
        shown = "the NUL character" if bad == "\0" else repr(bad or name)
        raise SpecError(
            f"{what} name {name!r} would be a file outside {folder}: it holds {shown}",
            where,
            hint="a name that becomes a file name holds no /, \\ or ..; put folders in result_dir= "
            "or the database's file=",
        )
    return name


def split_list(text: str, sep: str = ",") -> list[str]:
    """The non-empty items of a separated list, stripped."""
    return [v.strip() for v in text.split(sep) if v.strip()]


def only_children(node: Node, allowed: set[str]) -> None:
    """Refuse a child element not in `allowed`."""
    for child in node.children:
        if child.tag not in allowed:
            hint = did_you_mean(child.tag, allowed) or "expected " + ", ".join(
                f"<{a}>" for a in sorted(allowed)
            )
            raise SpecError(
                f"unknown element <{child.tag}> in <{node.tag}>", child.where, hint=hint
            )


DIRECTIONS = ("lower", "higher")  # a pattern's direction=: which way its figure is better


def pattern_direction(node: Node, name: str) -> str:
    """A pattern's declared direction= (lower or higher), '' when it declares none."""
    value = node.attrs.get("direction", "").strip()
    if value and value not in DIRECTIONS:
        raise SpecError(
            f"direction={value!r} of pattern '{name}' is not lower or higher",
            node.where,
            hint=did_you_mean(value, DIRECTIONS)
            or 'expected direction="lower" (a time, energy...) or '
            'direction="higher" (a rate, a throughput)',
        )
    return value


def pattern_unit(node: Node, name: str) -> str:
    """A pattern's unit=, which must be readable as a unit (spec.units): the history stores it and
    decides from it which way the figure is better."""
    from caramel.stages.spec.units import MAX_UNIT_CHARS, unit_problem

    unit = node.attrs.get("unit", "")
    problem = unit_problem(unit)
    if problem is not None:
        raise SpecError(
            f"unit={unit[: MAX_UNIT_CHARS + 10]!r} of pattern '{name}' cannot be read: {problem}",
            node.where,
            hint='write a unit such as unit="s", "ms", "tokens/s", "images/s", "Wh" or "%"',
        )
    return unit.strip()
