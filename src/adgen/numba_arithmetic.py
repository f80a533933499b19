"""Python's integer division in nopython code compiled with ``error_model="numpy"``.

The numba backend compiles its modules with numba's ``error_model="numpy"``: a float divided
by zero is ``inf`` or ``nan``, as NumPy's floats (and so the default backend's array elements)
give it, where numba's default model raises ``ZeroDivisionError``. That model also divides an
*integer* by zero without a word (``i // 0`` and ``i % 0`` are 0, ``i / 0`` is ``inf``), where
Python and numba's default model raise. An integer computed that way steers the loops and the
indices of the code, so a silent value there would be a silent wrong gradient:
``adgen.transforms.numba_divisions`` makes each ``//``, ``%`` and ``/`` whose operands may
both be integers call these helpers, which raise Python's ``ZeroDivisionError`` for two
integers and a zero divisor, and compute NumPy's float result otherwise. ``i ** j`` of two
integers is an integer in numba whatever the sign of ``j`` (``2 ** -1`` is 0), a float in
Python (0.5): ``py_pow`` raises for a negative exponent.

Importing this module imports numba (``adgen.numba_runtime`` re-exports the helpers).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload

__all__ = ["py_floordiv", "py_mod", "py_pow", "py_truediv"]


def _integers(a: Any, b: Any) -> bool:
    return isinstance(a, (types.Integer, types.Boolean)) and \
        isinstance(b, (types.Integer, types.Boolean))


def _numbers(a: Any, b: Any) -> bool:
    kinds = (types.Integer, types.Boolean, types.Float)
    return isinstance(a, kinds) and isinstance(b, kinds)


def py_floordiv(a: Any, b: Any) -> Any:
    """``a // b`` as Python computes it for two ints (``ZeroDivisionError`` at ``b == 0``),
    as NumPy for a float (``inf`` / ``nan`` at zero)."""
    raise NotImplementedError("only called from nopython code")


def py_mod(a: Any, b: Any) -> Any:
    """``a % b``, as :func:`py_floordiv`."""
    raise NotImplementedError("only called from nopython code")


def py_truediv(a: Any, b: Any) -> Any:
    """``a / b``, as :func:`py_floordiv`."""
    raise NotImplementedError("only called from nopython code")


@overload(py_floordiv, jit_options={"cache": True})
def _py_floordiv(a, b):
    if _integers(a, b):
        def checked(a, b):
            if b == 0:
                raise ZeroDivisionError("integer division or modulo by zero")
            return a // b
        return checked
    if _numbers(a, b):
        return lambda a, b: np.floor_divide(a, b)
    return None


@overload(py_mod, jit_options={"cache": True})
def _py_mod(a, b):
    if _integers(a, b):
        def checked(a, b):
            if b == 0:
                raise ZeroDivisionError("integer division or modulo by zero")
            return a % b
        return checked
    if _numbers(a, b):
        return lambda a, b: np.remainder(a, b)
    return None


@overload(py_truediv, jit_options={"cache": True})
def _py_truediv(a, b):
    if _integers(a, b):
        def checked(a, b):
            if b == 0:
                raise ZeroDivisionError("division by zero")
            return a / b
        return checked
    if _numbers(a, b):
        return lambda a, b: np.true_divide(a, b)
    return None


def py_pow(a: Any, b: Any) -> Any:
    """``a ** b`` of two ints, an int as numba types it, checked: a negative ``b`` raises a
    ``ValueError`` (Python's value is a float, 0.5 for ``2 ** -1``, where numba's is the int 0,
    and a type cannot depend on a value in nopython code)."""
    raise NotImplementedError("only called from nopython code")


@overload(py_pow, jit_options={"cache": True})
def _py_pow(a, b):
    if _integers(a, b):
        def checked(a, b):
            if b < 0:
                raise ValueError(
                    "the numba backend computes an int ** int as an int (numba's rule) and "
                    "this exponent is negative, where Python gives a float (2 ** -1 is 0.5): "
                    "write float(i) ** j, or use backend='default' / 'auto'")
            return a ** b
        return checked
    return None
