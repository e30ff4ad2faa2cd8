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
    tokens = _tokens(expr.strip())
    if any(t.startswith("tag:") and "," in t for t in tokens):
        raise TagSyntaxError("',' is not a tag operator; use '|' for or, '+' for and")
    tree, rest = _or(tokens)
    if rest:
        raise TagSyntaxError(f"unexpected {rest[0].removeprefix('tag:')!r}")
    return tree


def _tokens(text: str) -> list[str]:
    """The operators and `tag:NAME` words of a stripped expression."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise TagSyntaxError(f"unexpected character at {text[pos:].lstrip()!r}")
        tokens.append(match.group("op") or "tag:" + match.group("name"))
        pos = match.end()
    return tokens


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
    if not tokens:
        raise TagSyntaxError("expected a tag name, '!' or '(' at the end")
    head = tokens[0]
    if head in ("!", "^"):
        inner, rest = _not(tokens[1:])
        return _Not(inner), rest
    if head == "(":
        return _group(tokens[1:])
    if head.startswith("tag:"):
        return _Tag(head[4:]), tokens[1:]
    raise TagSyntaxError(f"expected a tag name, '!' or '(', found {head!r}")


def _group(tokens: list[str]) -> Parsed:
    """`( expression )`, the tokens after the `(`."""
    inner, rest = _or(tokens)
    if not rest or rest[0] != ")":
        raise TagSyntaxError("missing ')'")
    return inner, rest[1:]


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
