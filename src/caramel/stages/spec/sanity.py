"""Sanity checks (caramel addition, ReFrame's sanity functions written declaratively).

A step or an analyser may declare what must appear in a log, what must not, and an expression
over the figures that must hold; a workpackage failing one is a failed row (analyse/sanity.py).

    YAML:  sanity: [{expect: "Final loss", file: job.out}, {reject: "NaN|Traceback"},
                    {expr: "tokens_per_s > 0 and loss < 10"}]
    XML:   <sanity expect="Final loss" file="job.out"/>  <sanity reject="NaN|Traceback"/>
           <sanity expr="tokens_per_s &gt; 0 and loss &lt; 10"/>

In XML a `<sanity>` inside `<step>` or `<analyser>` makes the file caramel's only (JUBE refuses an
unknown element there); inside the benchmark's `<comment>`, with `step=` or `analyser=` naming
where it belongs, JUBE reads only the comment's text and the file stays JUBE's too. In YAML the
key is JUBE-readable anyway (JUBE keeps an unknown key as an attribute it never reads).

An expression is read here once (a syntax error names the file and line) and checked against a
small grammar: numbers, strings, names, comparisons, + - * / // % **, and/or/not and brackets;
no calls, attributes, subscripts or anything else. `$name` and `${name}` may stand for `name`.
"""

from __future__ import annotations

import ast
import os
import re

from caramel.errors import SpecError, did_you_mean
from caramel.stages.spec.model import SANITY_KINDS, Sanity, SanityKind
from caramel.stages.spec.tree import Node

ATTRIBUTES = (*SANITY_KINDS, "file", "tag", "step", "analyser", "analyzer")
DEFAULT_FILE = "stdout"
ALLOWED_NODES = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.Compare,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Name,
    ast.Load,
    ast.Constant,
)
_DOLLAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
EXAMPLE = (
    'write <sanity expect="regex"/>, reject="regex" or expr="loss < 10" (YAML: sanity: '
    '[{expect: "..."}])'
)


def read_sanity(node: Node) -> Sanity:
    """One `<sanity>` element (YAML: one item of `sanity:`), checked: one kind, a valid regex or
    expression, a file inside the work folder."""
    _check_attributes(node)
    kind = _kind(node)
    text = node.attrs[kind].strip()
    if not text:
        raise SpecError(f"<sanity {kind}=...> is empty", node.where, hint=EXAMPLE)
    file = node.attrs.get("file", "").strip()
    if kind == "expr":
        return _expr_sanity(kind, text, file, node)
    _check_regex(kind, text, node)
    return Sanity(kind, text, _work_file(file, node), node.where)


def _work_file(file: str, node: Node) -> str:
    """The file an expect= or reject= check reads: stdout by default, else a path inside the work
    folder."""
    file = file or DEFAULT_FILE
    if os.path.isabs(file) or ".." in file.replace("\\", "/").split("/"):
        raise SpecError(
            f"<sanity file={file!r}> is not a file of the work folder",
            node.where,
            hint="give a path relative to the work folder, without .. (default: stdout)",
        )
    return file


def _check_attributes(node: Node) -> None:
    for attr in node.attrs:
        if attr not in ATTRIBUTES:
            raise SpecError(
                f"unknown attribute '{attr}' of <sanity>",
                node.where,
                hint=did_you_mean(attr, ATTRIBUTES) or EXAMPLE,
            )


def _kind(node: Node) -> SanityKind:
    """The one check the element makes: expect=, reject= or expr=."""
    kinds = [k for k in SANITY_KINDS if k in node.attrs]
    if len(kinds) != 1:
        raise SpecError(
            f"<sanity> needs exactly one of expect=, reject= or expr=; it has {_listed(kinds)}",
            node.where,
            hint="write one check per <sanity> (YAML: one mapping per list item)",
        )
    return SanityKind(kinds[0])


def _listed(kinds: list[str]) -> str:
    if not kinds:
        return "none of expect=, reject=, expr="
    return " and ".join(f"{k}=" for k in kinds)


def _expr_sanity(kind: SanityKind, text: str, file: str, node: Node) -> Sanity:
    """An expr= check: a valid expression, reading no file."""
    if file:
        raise SpecError(
            "<sanity expr=...> reads no file; file= is for expect= and reject=", node.where
        )
    parse_expression(text, node)
    return Sanity(kind, text, "", node.where)


def _check_regex(kind: SanityKind, text: str, node: Node) -> None:
    try:
        re.compile(text, re.MULTILINE)
    except re.error as exc:
        raise SpecError(
            f"<sanity {kind}={text!r}>: not a valid regular expression: {exc}",
            node.where,
            hint="Python's re syntax; escape ( ) [ ] . * + ? with a backslash to match them",
        ) from None


def parse_expression(text: str, node: Node) -> ast.Expression:
    """The expression's tree, refused (naming file and line) when it is not valid or leaves the
    grammar."""
    try:
        tree = ast.parse(plain_names(text), mode="eval")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL character
        raise SpecError(
            f"<sanity expr={text!r}>: not a valid expression: {getattr(exc, 'msg', exc)}",
            node.where,
            hint='e.g. expr="tokens_per_s > 0 and loss < 10"',
        ) from None
    for part in ast.walk(tree):
        if not isinstance(part, ALLOWED_NODES):
            raise SpecError(
                f"<sanity expr={text!r}>: {describe(part)} is not allowed in a sanity expression",
                node.where,
                hint="names, numbers, strings, comparisons, + - * / // % **, and, or, not",
            )
        if isinstance(part, ast.Constant) and not isinstance(part.value, (int, float, str)):
            raise SpecError(
                f"<sanity expr={text!r}>: the constant {part.value!r} is not allowed",
                node.where,
                hint="numbers, strings, True and False",
            )
    return tree


def plain_names(text: str) -> str:
    """`$name` and `${name}` written as `name`."""
    return _DOLLAR.sub(lambda m: m.group(1) or m.group(2), text)


def expression_names(tree: ast.Expression) -> list[str]:
    """The names an expression reads, in order, each once."""
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))


def describe(part: ast.AST) -> str:
    names = {
        ast.Call: "a call",
        ast.Attribute: "an attribute (.)",
        ast.Subscript: "a subscript ([])",
        ast.Lambda: "a lambda",
        ast.IfExp: "an if-else",
        ast.NamedExpr: "an assignment (:=)",
    }
    return next(
        (text for kind, text in names.items() if isinstance(part, kind)), f"'{type(part).__name__}'"
    )


def from_comment(bench_node: Node) -> list[tuple[str, str, Node]]:
    """The `<sanity>` elements inside the benchmark's `<comment>` (XML a JUBE can still read): each
    as (step or analyser, its name, the element)."""
    return [
        _owned_sanity(child)
        for comment in bench_node.findall("comment")
        for child in comment.findall("sanity")
    ]


def _owned_sanity(child: Node) -> tuple[str, str, Node]:
    """(step or analyser, its name, the element) of a `<sanity>` inside `<comment>`."""
    owners = [k for k in ("step", "analyser", "analyzer") if child.attrs.get(k, "").strip()]
    if len(owners) != 1:
        raise SpecError(
            "<sanity> inside <comment> needs step= or analyser= (one of them)",
            child.where,
            hint='write <sanity step="run" expect="..."/> to check the workpackages of step run',
        )
    owner = "analyser" if owners[0] == "analyzer" else owners[0]
    return owner, child.attrs[owners[0]].strip(), child
