"""numba_divisions: Python's integer division in a module numba compiles with error_model="numpy".

The numba backend compiles with ``error_model="numpy"`` (``adgen.numba_function``): a float
divided by zero is ``inf`` / ``nan``, as the default backend's NumPy floats give it, where
numba's default model raises ``ZeroDivisionError`` (the gradient of ``1.0 / x`` at 0). That
model divides an int by zero silently (0 for ``//`` and ``%``, ``inf`` for ``/``), and numba
computes ``i ** j`` of two ints as an int whatever the sign of ``j``. Those ints steer loops
and indices, so this step points each such operation at a checked helper of
``adgen.numba_arithmetic`` (``py_floordiv``, ``py_mod``, ``py_truediv``, ``py_pow``), which
raises as Python does:

- ``a // b`` and ``a % b`` unless an operand is known to be a float or ``b`` is a nonzero
  constant (the helpers compute NumPy's float result for floats, so an operand of unknown
  type is safe);
- ``a / b`` where both operands are known to be ints (or bools) and ``b`` is not a nonzero
  constant;
- ``a ** b`` where both are known to be ints and ``b`` is not a constant >= 0.

An augmented assignment (``k //= m``) becomes the assignment of the helper's call. Types come
from the forward's type analysis (``analyses.numba_types.scalar_types``, the pullback's
names being the forward's where they are shared); an adjoint (``*_bar``) is a float.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

__all__ = ["ERROR_MODEL", "HELPERS", "checked_divisions"]

#: numba's error model for every function of the module (adgen.numba_function, numba_module)
ERROR_MODEL = "numpy"
HELPERS = ("py_floordiv", "py_mod", "py_pow", "py_truediv")

_INTS = ("i8", "b1")


def _kind(e: ast.expr, types_: dict[str, Any]) -> Any:
    if isinstance(e, ast.Constant):
        v = e.value
        return "b1" if isinstance(v, bool) else "i8" if isinstance(v, int) else \
            "f8" if isinstance(v, float) else None
    if isinstance(e, ast.Name):
        if e.id.endswith("_bar"):
            return "f8"
        return types_.get(e.id)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _kind(e.operand, types_)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len":
        return "i8"
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "float":
        return "f8"
    if isinstance(e, ast.BinOp) and not isinstance(e.op, (ast.Div, ast.Pow)):
        a, b = _kind(e.left, types_), _kind(e.right, types_)
        if a in _INTS and b in _INTS:
            return "i8"
        if "f8" in (a, b):
            return "f8"
    return None


def _helper(op: ast.operator, left: ast.expr, right: ast.expr,
            types_: dict[str, Any]) -> str | None:
    """The checked helper ``left op right`` needs, or None."""
    a, b = _kind(left, types_), _kind(right, types_)
    constant = right.value if isinstance(right, ast.Constant) and \
        isinstance(right.value, (int, float)) else None
    if isinstance(op, (ast.FloorDiv, ast.Mod)):
        if a in ("f8", "f4") or b in ("f8", "f4") or constant:
            return None
        return "py_floordiv" if isinstance(op, ast.FloorDiv) else "py_mod"
    if isinstance(op, ast.Div):
        return "py_truediv" if a in _INTS and b in _INTS and not constant else None
    if isinstance(op, ast.Pow):
        return "py_pow" if a in _INTS and b in _INTS and \
            not (constant is not None and constant >= 0) else None
    return None


class _Checked(ast.NodeTransformer):
    def __init__(self, types_: dict[str, Any]) -> None:
        self.types = types_

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        helper = _helper(node.op, node.left, node.right, self.types)
        if helper is None:
            return node
        return ast.copy_location(ast.Call(func=ast.Name(id=helper, ctx=ast.Load()),
                                          args=[node.left, node.right], keywords=[]), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        read = copy.deepcopy(node.target)
        for n in ast.walk(read):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        helper = _helper(node.op, read, node.value, self.types)
        if helper is None:
            return node
        new = ast.Assign(targets=[node.target], value=ast.Call(
            func=ast.Name(id=helper, ctx=ast.Load()), args=[read, node.value], keywords=[]))
        ast.copy_location(new, node)
        if hasattr(node, "_user_line"):
            new._user_line = node._user_line  # type: ignore[attr-defined]
        return new


def checked_divisions(fns: tuple[ast.FunctionDef, ...], types_: dict[str, Any]) -> None:
    """Points the integer ``//``, ``%``, ``/`` and ``**`` of ``fns`` at the checked helpers
    (in place)."""
    for fn in fns:
        _Checked(types_).visit(fn)
