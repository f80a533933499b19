"""What the nopython runtime's ``@overload`` typing functions ask of a numba type.

Shared by :mod:`adgen.numba_runtime` and the modules it re-exports (``numba_reductions``,
``numba_linalg``, ``numba_guards``). Importing this module imports numba.
"""

from __future__ import annotations

from typing import Any

from numba import types

__all__ = ["is_number"]


def is_number(t: Any) -> bool:
    """Whether numba type ``t`` is a number's: a float, an int or a bool."""
    return isinstance(t, (types.Float, types.Integer, types.Boolean))
