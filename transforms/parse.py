"""Parse: a Python function object to a gast FunctionDef with the facts the compiler needs.

Input: a function object. Output: a :class:`Parsed` whose ``tree`` is the function's
``FunctionDef`` with line numbers of the user's file (decorators removed), plus the file, the
function's globals and closure cells. Raises MissingRuleError when the source is unavailable.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

import gast
from adgen.transforms.walk import walk

from adgen.errors import Location, MissingRuleError, UnsupportedError


@dataclass
class Parsed:
    """A parsed user function."""

    fn: Any
    tree: gast.FunctionDef
    file: str
    lines: list[str]
    namespace: dict[str, Any] = field(default_factory=dict)  # globals + closure cells
    nested_defs: list[Any] = field(default_factory=list)  # set aside by hoist_defs
    closure_free: set[str] = field(default_factory=set)  # names nested defs read
    renamed_params: dict[str, str] = field(default_factory=dict)  # new name -> user's name

    def is_local(self, name: str) -> bool:
        """True when ``name`` is a parameter or is assigned in the function."""
        if not hasattr(self, "_locals"):
            names = {a.id for a in self.tree.args.args}
            for n in walk(self.tree):
                if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Param)):
                    names.add(n.id)
                elif isinstance(n, gast.FunctionDef) and n is not self.tree:
                    names.add(n.name)
            self._locals = names
        return name in self._locals

    def location(self, node: gast.AST) -> Location:
        line = getattr(node, "lineno", 0) or 0
        col = getattr(node, "col_offset", 0) or 0
        import linecache

        return Location(self.file, line, col, linecache.getline(self.file, line))


def parse_function(fn: Any) -> Parsed:
    """Reads and parses ``fn``'s source.

    Raises:
        MissingRuleError: when the source cannot be read and there is no rule.
        UnsupportedError: for lambdas, async functions and generators.
    """
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        raise MissingRuleError(
            f"adgen cannot read the source of {name} and it has no derivative rule",
            hint="register one with @adgen.rrule(" + getattr(fn, "__name__", "f") + ")") from exc
    src = textwrap.dedent("".join(lines))
    try:
        module = gast.parse(src)
    except SyntaxError as exc:
        raise UnsupportedError(f"cannot parse the source of {fn.__qualname__}: {exc.msg}") from exc
    node = module.body[0]
    gast.increment_lineno(module, first - 1)
    indent = len(lines[0]) - len(lines[0].lstrip())
    for sub in walk(module):
        if hasattr(sub, "col_offset") and sub.col_offset is not None:
            sub.col_offset += indent
    if isinstance(node, gast.AsyncFunctionDef):
        raise UnsupportedError("async functions are not differentiable",
                               _loc(file, node), hint="differentiate a plain def")
    if not isinstance(node, gast.FunctionDef):
        raise UnsupportedError(
            f"{getattr(fn, '__qualname__', fn)} is a lambda or not a plain function",
            _loc(file, node), hint="write it as a def, or register an adgen.rrule")
    node.decorator_list = []
    namespace = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:
                pass
    import linecache

    linecache.checkcache(file)
    all_lines = linecache.getlines(file)
    return Parsed(fn=fn, tree=node, file=file, lines=all_lines, namespace=namespace)


def _loc(file: str, node: gast.AST) -> Location:
    import linecache

    line = getattr(node, "lineno", 0)
    return Location(file, line, getattr(node, "col_offset", 0), linecache.getline(file, line))
