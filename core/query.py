"""A small filter language over runs: comparisons joined by ``and``, ``or`` and ``not``.

    method == "lora" and peak_gib > 40 and model ~ "llama"

The text is parsed by Python's own parser (:mod:`ast`) and never evaluated:
only comparisons (``== != < <= > >=``), ``in`` / ``not in``, ``~`` (a
case-insensitive regular-expression search), the boolean operators and
parentheses are accepted, over field references (``seq_len``, ``loss.last``,
``config.training_args.seed``, ``metrics["eval/acc"].max``) and literal
values. Python has no binary ``~``, so one that follows an operand is read as
``@`` (one character, so every column stays where the user typed it) and
``@`` means "matches". Errors say the column of the mistake.

What a field is and how it is read (or turned into SQL) is the tracker's
business; this module knows only the shape of a query.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

OPERATORS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
             ast.GtE: ">=", ast.In: "in", ast.NotIn: "not in"}
# ``5 < x`` is ``x > 5``; ``"a" in tags`` is ``tags has "a"``.
MIRRORED = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<=",
            "in": "has", "not in": "not has"}
Scalar = str | int | float | bool | None


class QueryError(ValueError):
    """A query that cannot be read, with the 1-based column of the mistake."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"column {column}: {message}")
        self.message = message
        self.column = column


@dataclass(frozen=True)
class Ref:
    """A field as written: its dotted path and where it starts."""

    path: tuple[str, ...]
    column: int

    @property
    def text(self) -> str:
        out = self.path[0]
        for part in self.path[1:]:
            out += f".{part}" if part.isidentifier() else f"[{part!r}]"
        return out


@dataclass(frozen=True)
class Compare:
    """``ref op value``; ``op`` is one of == != < <= > >= ~ in, not in, has, not has."""

    ref: Ref
    op: str
    value: Scalar | tuple[Scalar, ...]
    column: int  # where the value was written (type errors point there)


@dataclass(frozen=True)
class All:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Either:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    part: Node


Node = Compare | All | Either | Not


def parse(text: str) -> Node:
    """The query ``text`` as a tree (raises :class:`QueryError`)."""
    line = text.replace("\r", " ").replace("\n", " ")  # one line: columns count from its start
    if not line.strip():
        raise QueryError("the query is empty", 1)
    try:
        tree = ast.parse(_tildes_as_matches(line).lstrip(), mode="eval")
    except SyntaxError as err:
        raise _syntax_error(line, err) from None
    return _Reader(_indent(line)).node(tree.body)


def leaves(node: Any) -> Iterator[Any]:
    """The comparisons of a tree (or whatever a caller put in their place), left to right."""
    if isinstance(node, Not):
        yield from leaves(node.part)
    elif isinstance(node, (All, Either)):
        for part in node.parts:
            yield from leaves(part)
    else:
        yield node


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _tildes_as_matches(line: str) -> str:
    """``a ~ "x"`` as ``a @ "x"``; an ``@`` the user typed, or ``!~``, is an error."""
    chars = list(line)
    previous = None
    for token in _tokens(line):
        column = token.start[1]
        if token.type == tokenize.OP and token.string == "@":
            raise QueryError("'@' is not an operator here; '~' matches a pattern", column + 1)
        if token.type == tokenize.ERRORTOKEN and line[column:column + 2] == "!~":
            raise QueryError('write not (field ~ "pattern") for "does not match"', column + 1)
        if token.type == tokenize.OP and token.string == "~" and _is_operand(previous):
            chars[column] = "@"
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token
    return "".join(chars)


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    """Python's tokens of ``line``, as far as they go (the parser reports the rest)."""
    out = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            out.append(token)
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def _is_operand(token: tokenize.TokenInfo | None) -> bool:
    if token is None:
        return False
    if token.type == tokenize.NAME:
        return not keyword.iskeyword(token.string)
    return token.type in (tokenize.NUMBER, tokenize.STRING) or token.string in (")", "]")


def _syntax_error(line: str, err: SyntaxError) -> QueryError:
    """What Python's parser found, said for a query, at the column of the mistake."""
    tokens = [t for t in _tokens(line) if t.string.strip()]
    end = len(line.rstrip()) + 1
    if tokens and tokens[-1].string in _NEEDS_MORE:
        return QueryError(f"the query stops after '{tokens[-1].string}': a value or a "
                          "comparison should follow", end)
    column = (err.offset or 1) + _indent(line) if err.lineno == 1 else end
    if line[column - 1:column] == "=" and line[column:column + 1] != "=":
        return QueryError("use == to compare", column)
    message = (err.msg or "invalid syntax").split(". Perhaps")[0].split(". Maybe")[0]
    if message.startswith("invalid syntax"):
        message = "this does not read as a query here (compare fields with values: seq_len >= 2048)"
    return QueryError(message[:1].lower() + message[1:], min(column, end))


_NEEDS_MORE = {"==", "!=", "<", "<=", ">", ">=", "~", "=", "and", "or", "not", "in", "(", "[",
               ","}


class _Reader:
    """Turns Python's tree into a query tree, refusing every node that is not part of one."""

    def __init__(self, indent: int) -> None:
        self.indent = indent

    def column(self, node: ast.AST) -> int:
        return getattr(node, "col_offset", 0) + 1 + self.indent

    def node(self, node: ast.expr) -> Node:
        if isinstance(node, ast.BoolOp):
            parts = tuple(self.node(v) for v in node.values)
            return All(parts) if isinstance(node.op, ast.And) else Either(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Not(self.node(node.operand))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.match(node)
        if self.is_ref(node):
            return Compare(self.ref(node), "==", True, self.column(node))
        raise QueryError("expected a comparison such as method == \"lora\" or seq_len > 1024",
                         self.column(node))

    def compare(self, node: ast.Compare) -> Node:
        sides = [node.left, *node.comparators]
        parts = []
        for left, op, right in zip(sides, node.ops, sides[1:], strict=False):
            if type(op) not in OPERATORS:
                word = "is not" if isinstance(op, ast.IsNot) else "is"
                raise QueryError(f"'{word}' is not supported: compare with == None or != None",
                                 self.column(right))
            parts.append(self.pair(left, OPERATORS[type(op)], right))
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def pair(self, left: ast.expr, op: str, right: ast.expr) -> Compare:
        if self.is_ref(left) and self.is_ref(right):
            raise QueryError("compare a field with a value, not with another field",
                             self.column(right))
        if self.is_ref(left):
            return self.checked(self.ref(left), op, right)
        if self.is_ref(right):
            return self.checked(self.ref(right), MIRRORED[op], left)
        if isinstance(left, (ast.Constant, ast.UnaryOp, ast.List, ast.Tuple)):
            raise QueryError("one side of a comparison must be a field", self.column(left))
        raise QueryError("only fields and values can be compared: no calls or arithmetic",
                         self.column(left))

    def checked(self, ref: Ref, op: str, node: ast.expr) -> Compare:
        value = self.value(node, many=op in ("in", "not in"))
        if op in ("in", "not in") and not isinstance(value, tuple):
            raise QueryError(f'put the choices in brackets: {ref.text} {op} ["a", "b"]',
                             self.column(node))
        return Compare(ref, op, value, self.column(node))

    def match(self, node: ast.BinOp) -> Compare:
        if not self.is_ref(node.left):
            raise QueryError("'~' needs a field on its left", self.column(node.left))
        pattern = self.value(node.right)
        if not isinstance(pattern, str):
            raise QueryError('\'~\' needs a pattern in quotes on its right: name ~ "seed\\d+"',
                             self.column(node.right))
        try:
            re.compile(pattern)
        except re.error as err:
            raise QueryError(f"bad pattern: {err.msg}", self.column(node.right)) from None
        return Compare(self.ref(node.left), "~", pattern, self.column(node.right))

    @staticmethod
    def is_ref(node: ast.expr) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in ("True", "False", "None")

    def ref(self, node: ast.expr) -> Ref:
        path: list[str] = []
        start = node
        while not isinstance(node, ast.Name):
            if isinstance(node, ast.Attribute):
                path.append(node.attr)
            else:  # a Subscript: metrics["eval/acc"]
                key = node.slice
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    raise QueryError('a field name in brackets must be quoted: metrics["eval/acc"]',
                                     self.column(key))
                path.append(key.value)
            node = node.value
        path.append(node.id)
        return Ref(tuple(reversed(path)), self.column(start))

    def value(self, node: ast.expr, many: bool = False) -> Scalar | tuple[Scalar, ...]:
        if many and isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, type(None))):
            return node.value
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
                and isinstance(node.operand, ast.Constant)
                and type(node.operand.value) in (int, float)):
            return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
        raise QueryError("expected a value: a number, a string in quotes, True, False or None",
                         self.column(node))
