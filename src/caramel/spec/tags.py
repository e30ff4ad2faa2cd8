"""Tag expressions: `!` not, `+` and, `|` or, parentheses; names are the tags given on the command line.

Parsed by a small recursive-descent parser (never `eval`), so a malformed expression is an error
that says where it broke.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

_TOKEN = re.compile(r"\s*(?:(?P<op>[!+|()^])|(?P<name>[^\s!+|()^]+))")


class TagSyntaxError(ValueError):
    pass


@lru_cache(maxsize=4096)
def _parse(expr: str):
    tokens: list[str] = []
    pos = 0
    text = expr.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise TagSyntaxError(f"unexpected character at {text[pos:]!r}")
        tokens.append(match.group("op") or "tag:" + match.group("name"))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if any(t.startswith("tag:") and "," in t for t in tokens):
        raise TagSyntaxError("',' is not a tag operator; use '|' for or, '+' for and")
    tree, rest = _or(tokens)
    if rest:
        raise TagSyntaxError(f"unexpected {rest[0].removeprefix('tag:')!r}")
    return tree


def _or(tokens):
    return _chain(tokens, "|", "or", _and)


def _and(tokens):
    return _chain(tokens, "+", "and", _not)


def _chain(tokens, operator: str, name: str, operand):
    """`operand (operator operand)*`, grouped from the left: `a|b|c` is `(a|b)|c`."""
    left, tokens = operand(tokens)
    while tokens and tokens[0] == operator:
        right, tokens = operand(tokens[1:])
        left = (name, left, right)
    return left, tokens


def _not(tokens):
    if tokens and tokens[0] in ("!", "^"):
        inner, rest = _not(tokens[1:])
        return ("not", inner), rest
    if tokens and tokens[0] == "(":
        inner, rest = _or(tokens[1:])
        if not rest or rest[0] != ")":
            raise TagSyntaxError("missing ')'")
        return inner, rest[1:]
    if tokens and tokens[0].startswith("tag:"):
        return ("tag", tokens[0][4:]), tokens[1:]
    raise TagSyntaxError("expected a tag name, '!' or '('" + (f", found {tokens[0]!r}" if tokens else " at the end"))


def _holds(tree, tags: Collection[str]) -> bool:
    kind = tree[0]
    if kind == "tag":
        return tree[1] in tags
    if kind == "not":
        return not _holds(tree[1], tags)
    if kind == "and":
        return _holds(tree[1], tags) and _holds(tree[2], tags)
    return _holds(tree[1], tags) or _holds(tree[2], tags)


def tag_matches(expr: str | None, tags: Collection[str]) -> bool:
    """Whether a `tag="..."` expression holds; no expression always holds."""
    if expr is None or expr.strip() == "":
        return True
    return _holds(_parse(expr), tags)
