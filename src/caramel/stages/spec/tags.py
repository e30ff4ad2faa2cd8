"""Tag expressions: `!` not, `+` and, `|` or, parentheses; names are the tags given on the command
line.

Parsed by a small recursive-descent parser (never `eval`), so a malformed expression is an error
that says where it broke.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal


@dataclass(frozen=True)
class _Tag:
    name: str


@dataclass(frozen=True)
class _Not:
    inner: Tree


@dataclass(frozen=True)
class _Both:
    op: Literal["and", "or"]
    left: Tree
    right: Tree


Tree = _Tag | _Not | _Both  # a parsed expression
Parsed = tuple[Tree, list[str]]  # a tree and the tokens after it

_TOKEN = re.compile(r"\s*(?:(?P<op>[!+|()^])|(?P<name>[^\s!+|()^]+))")


class TagSyntaxError(ValueError):
    pass


@lru_cache(maxsize=4096)
def _parse(expr: str) -> Tree:
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


def _or(tokens: list[str]) -> Parsed:
    return _chain(tokens, "|", "or", _and)


def _and(tokens: list[str]) -> Parsed:
    return _chain(tokens, "+", "and", _not)


def _chain(
    tokens: list[str],
    operator: str,
    name: Literal["and", "or"],
    operand: Callable[[list[str]], Parsed],
) -> Parsed:
    """`operand (operator operand)*`, grouped from the left: `a|b|c` is `(a|b)|c`."""
    left, tokens = operand(tokens)
    while tokens and tokens[0] == operator:
        right, tokens = operand(tokens[1:])
        left = _Both(name, left, right)
    return left, tokens


def _not(tokens: list[str]) -> Parsed:
    if tokens and tokens[0] in ("!", "^"):
        inner, rest = _not(tokens[1:])
        return _Not(inner), rest
    if tokens and tokens[0] == "(":
        inner, rest = _or(tokens[1:])
        if not rest or rest[0] != ")":
            raise TagSyntaxError("missing ')'")
        return inner, rest[1:]
    if tokens and tokens[0].startswith("tag:"):
        return _Tag(tokens[0][4:]), tokens[1:]
    raise TagSyntaxError(
        "expected a tag name, '!' or '('" + (f", found {tokens[0]!r}" if tokens else " at the end")
    )


def _holds(tree: Tree, tags: Collection[str]) -> bool:
    if isinstance(tree, _Tag):
        return tree.name in tags
    if isinstance(tree, _Not):
        return not _holds(tree.inner, tags)
    if tree.op == "and":
        return _holds(tree.left, tags) and _holds(tree.right, tags)
    return _holds(tree.left, tags) or _holds(tree.right, tags)


def tag_matches(expr: str | None, tags: Collection[str]) -> bool:
    """Whether a `tag="..."` expression holds; no expression always holds."""
    if expr is None or expr.strip() == "":
        return True
    return _holds(_parse(expr), tags)
