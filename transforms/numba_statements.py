"""numba_statements: the statements of the forward and pullback the numba rewrite works on.

The rewrite (:mod:`adgen.transforms.numba_emit` and its steps) changes ``ast`` trees in place,
statement by statement. Here: where in the user's code each statement came from
(:func:`annotate_lines` sets ``_user_line``, from the pullback's ``# line N`` markers or the
forward's own lines; :class:`Place` makes a refusal naming it), every statement in source
order (:func:`statements`) and every block (:func:`blocks`), a statement's own expressions
(:func:`own_nodes`), and the edits the steps make (:func:`replace_statement`,
:func:`insert_before`; :func:`enclosing_loop`).
"""

from __future__ import annotations

import ast
import linecache
import re

from adgen.errors import Location, UnsupportedError

__all__ = ["Place", "annotate_lines", "blocks", "enclosing_loop", "expr", "insert_before",
           "is_marker", "own_nodes", "parse_statements", "replace_statement",
           "runs_every_iteration", "statements"]

_MARKER = re.compile(r"^\x00# line (\d+)")


class Place:
    """The user's file, and a refusal that names the line of a generated statement."""

    def __init__(self, file: str) -> None:
        self.file = file

    def refuse(self, line: int, message: str, hint: str) -> UnsupportedError:
        src = linecache.getline(self.file, line) if line else ""
        return UnsupportedError(message, Location(self.file, line, len(src) - len(src.lstrip()),
                                                  src) if line else None, hint=hint)


def annotate_lines(body: list[ast.stmt], line: int = 0, markers: bool = False) -> int:
    """Sets ``_user_line`` on every statement. In the pullback (``markers``) the lines come
    from the marker comments (``# line N: ...``), since statements the reverse pass builds
    carry the def's line; in the forward, from each statement's own line. A statement
    without one takes the line before it, in its block or an enclosing one."""
    for st in body:
        m = _MARKER.match(st.value.value) if is_marker(st) else None
        if m:
            line = int(m.group(1))
        own = getattr(st, "lineno", 0) or 0
        if own and not isinstance(st, ast.Expr) and (not markers or not line):
            line = own
        st._user_line = line  # type: ignore[attr-defined]
        for attr in ("body", "orelse"):
            inner = getattr(st, attr, None)
            if isinstance(inner, list):
                annotate_lines(inner, line, markers)
    return line


def is_marker(st: ast.stmt) -> bool:
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and \
        isinstance(st.value.value, str) and st.value.value.startswith("\x00#")


def statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement in source order (markers left out: they become comments)."""
    out: list[ast.stmt] = []
    for st in body:
        if is_marker(st):
            continue
        out.append(st)
        for attr in ("body", "orelse"):
            inner = getattr(st, attr, None)
            if isinstance(inner, list):
                out.extend(statements(inner))
    return out


def parse_statements(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def own_nodes(st: ast.stmt) -> list[ast.AST]:
    """The expression nodes of a statement, not of the statements nested in it."""
    out: list[ast.AST] = []
    for f, v in ast.iter_fields(st):
        if f in ("body", "orelse"):
            continue
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, ast.AST):
                out.extend(ast.walk(x))
    return out


def blocks(fn: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list of ``fn`` (its body, loops' and branches' bodies and else arms),
    found by walking statements only: the expressions, most of the tree, hold no block."""
    out = []
    todo = [fn]
    while todo:
        node = todo.pop()
        for attr in ("body", "orelse", "finalbody"):
            v = getattr(node, attr, None)
            if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
                out.append(v)
                todo += v
        for h in getattr(node, "handlers", ()):
            todo.append(h)
    return out


def replace_statement(fn: ast.AST, old: ast.stmt, new: list[ast.stmt]) -> None:
    """``new`` in place of ``old`` (in whichever block of ``fn`` holds it), at its line."""
    _splice(fn, old, new, 1)


def insert_before(fn: ast.AST, old: ast.stmt, new: list[ast.stmt]) -> None:
    """``new`` just before ``old`` (in whichever block of ``fn`` holds it), at its line."""
    _splice(fn, old, new, 0)


def _splice(fn: ast.AST, old: ast.stmt, new: list[ast.stmt], replaced: int) -> None:
    for b in blocks(fn):
        for k, st in enumerate(b):
            if st is old:
                for n in new:
                    n._user_line = getattr(old, "_user_line", 0)
                b[k:k + replaced] = new
                return
    raise AssertionError("statement not found")


def enclosing_loop(fn: ast.AST, target: ast.stmt) -> ast.stmt | None:
    found: list[ast.stmt | None] = [None]

    def visit(body: list[ast.stmt], loop: ast.stmt | None) -> bool:
        for st in body:
            if st is target:
                found[0] = loop
                return True
            inner = st if isinstance(st, (ast.For, ast.While)) else loop
            for attr in ("body", "orelse"):
                v = getattr(st, attr, None)
                if isinstance(v, list) and visit(v, inner):
                    return True
        return False

    visit(fn.body, None)
    return found[0]


def runs_every_iteration(loop: ast.For, st: ast.stmt) -> bool:
    """Whether ``st`` runs once per iteration of ``loop`` (in its body, not under an if)."""
    return any(s is st for s in loop.body)
