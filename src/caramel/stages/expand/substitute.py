"""JUBE's `$` substitution, the one implementation every stage uses.

- `$name` and `${name}` are replaced by the value of `name` when it is known;
- unknown or malformed placeholders (`$BENCH_DIR`, `$(date)`, `${X:+y}`) stay exactly as written;
- `$$` is an escaped dollar: kept as `$$` while a value is still being expanded (`final=False`),
  turned into `$` in the final text (`final=True`);
- inserted values are literal: a `$` inside an inserted value is not substituted again.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Protocol

_PLACEHOLDER = re.compile(r"\$(?:(\$)|\{([_a-zA-Z][_a-zA-Z0-9]*)\}|([_a-zA-Z][_a-zA-Z0-9]*))")
# JUBE also counts `$1abc`-style names (\w) as references when ordering parameters.
_REFERENCE = re.compile(r"\$(?:(\$)|\{(\w+)\}|(\w+))")


class Lookup(Protocol):
    """What `substitute` reads values from: a dict of texts, or anything with its `get`."""

    def get(self, name: str, /) -> str | None: ...


def substitute(text: str, values: Lookup, final: bool = False) -> str:
    """Replace known placeholders in `text` by `values`; see the module docstring for the rules."""
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "$" if final else "$$"
        name = match.group(2) or match.group(3)
        value = values.get(name)
        return match.group(0) if value is None else value

    return _PLACEHOLDER.sub(replace, text)


@lru_cache(maxsize=65536)
def references(text: str) -> frozenset[str]:
    """Names that `text` refers to with `$name` or `${name}` (escaped `$$` not counted)."""
    if "$" not in text:
        return frozenset()
    found = set()
    for match in _REFERENCE.finditer(text):
        if not match.group(1):
            found.add(match.group(2) or match.group(3))
    return frozenset(found)


def has_placeholder(text: str) -> bool:
    """Whether any `$name` / `${name}` (known or not) is left in `text`."""
    return any(not m.group(1) for m in _REFERENCE.finditer(text)) if "$" in text else False


def escape(text: str) -> str:
    """Make a final text literal for a later substitution (`$` → `$$`)."""
    return text.replace("$", "$$")
