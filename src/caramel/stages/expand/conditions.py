"""Conditions a file declares: `active=` of a step, a do or a file entry, `<exclude>`, a table's
`filter=`.

One evaluator for all of them, used by expansion, the engine and the tables. JUBE's rule: `true` and
`false` (any case) are words, anything else is a Python expression. `yes`/`no` are not words here
(JUBE evaluates them as Python, where they are unknown names), so this is not
`vocabulary.plain_bool`.
"""

from __future__ import annotations

from caramel.errors import ExpandError, Location


def eval_bool(text: str, what: str, where: Location | None) -> bool:
    """`true`/`false` or a Python condition (JUBE's active= and caramel's exclude); empty is
    true."""
    stripped = text.strip()
    if stripped.lower() in ("true", ""):
        return True
    if stripped.lower() == "false":
        return False
    try:
        # a condition the file declares as python (JUBE's own rule)
        return bool(eval(stripped, {"__builtins__": __builtins__}))  # noqa: S307
    except (Exception, SystemExit) as exc:  # exit() in a condition is an error too
        raise ExpandError(
            f"{what}: cannot evaluate {stripped!r}: {type(exc).__name__}: {exc}",
            where,
            hint="write true, false or a Python condition",
        ) from None
