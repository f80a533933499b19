"""``adgen.stop_gradient``: a value that is a constant of the derivative.

As ``jax.lax.stop_gradient`` and PyTorch's ``tensor.detach()``: the forward value is the
argument's, the derivative through it is zero, in reverse and forward mode and at every order
(a target network's output, a straight-through estimator ``x + stop_gradient(np.round(x) -
x)``, an EM step's responsibilities held fixed). Its rule registers when ``adgen.stop_gradient``
is first read (``adgen.__getattr__``), before a function naming it compiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.jvps import defjvp_kind
from adgen.rules.registry import defvjp


def stop_gradient(x: Any) -> Any:
    """``x`` as a constant: its value, with a zero derivative (a copy of an array, so that
    writing the result in place leaves ``x`` as it was, as in JAX).

    Raises:
        TypeError: for anything but an array or a number (apply it to each array of a
            container).
    """
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, (float, int, complex, np.number, np.bool_)):
        return x
    raise TypeError(f"adgen.stop_gradient takes an array or a number, not "
                    f"{type(x).__name__}: apply it to each array of a container")


@defvjp(stop_gradient, "x", linear=True)
def stop_gradient_vjp(g: Any, out: Any, x: Any) -> Any:
    return np.zeros(np.shape(x))


defjvp_kind("zero", stop_gradient)
