"""Rules for the NumPy functions that return views of their argument: ``fliplr``, ``flipud``,
``rot90``, ``atleast_3d``.

These are one line of NumPy over functions with rules, but they return views, and a view the
caller writes through must be known to the compiler as a view (``view=True``), so they are
rules, not reference implementations: each pullback is the inverse view of the cotangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.registry import defvjp


@defvjp(np.fliplr, "m", linear=True, view=True)
def fliplr(g: Any, out: Any, m: Any) -> Any:
    return np.fliplr(g)


@defvjp(np.flipud, "m", linear=True, view=True)
def flipud(g: Any, out: Any, m: Any) -> Any:
    return np.flipud(g)


@defvjp(np.rot90, "m, k=1, axes=(0, 1)", diff="m", reads="k, axes", linear=True, view=True)
def rot90(g: Any, out: Any, m: Any, k: Any, axes: Any) -> Any:
    return np.rot90(g, -k, axes)


@defvjp(np.atleast_3d, "ary", linear=True, view=True)
def atleast_3d(g: Any, out: Any, ary: Any) -> Any:
    return np.reshape(g, np.shape(ary))
