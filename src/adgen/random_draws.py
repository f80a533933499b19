"""Random draws made through a generator adgen meets at run time (``rng.random(shape)`` in a
helper given ``rng``): a draw is a constant of the forward pass.

The compiler makes a draw with constant parameters a constant where it knows the generator
(analyses.activity); a helper compiled for any arguments does not know that its ``rng``
parameter holds one, and calls the draw through :func:`adgen.dispatch.forward_of`, which
hands it here.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from adgen.errors import MissingRuleError
from adgen.rules import registry


def is_draw(fn: Any) -> bool:
    """True for a method of a NumPy random generator (``rng.normal``, ``np.random.rand``).

    Read from ``numpy.random`` only once something imported it: ``import numpy`` does not
    (NumPy imports it on first use of ``np.random``), and no generator exists before, so
    there is nothing to tell apart. adgen itself does not import it (``np.random.Generator``
    named here at import was a sixth of ``import adgen``: 36 M instructions, about 7 ms)."""
    random = sys.modules.get("numpy.random")
    if random is None:
        return False
    return isinstance(getattr(fn, "__self__", None), (random.Generator, random.RandomState))


def draw_forward(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """Draws; returns (out, saved) for :func:`draw_pullback`."""
    return fn(*args, **kwargs), ("draw", fn, args, kwargs)


def _float_parameters(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """The arguments of a draw that hold floats (they might carry a gradient)."""
    out = []
    for where, a in [*((f"argument {k + 1}", a) for k, a in enumerate(args)),
                     *((f"{k}=", a) for k, a in kwargs.items())]:
        if isinstance(a, (float, complex, np.inexact)) or (
                isinstance(a, np.ndarray) and a.dtype.kind in "fc"):
            out.append(f"{where} ({a!r})" if np.ndim(a) == 0 else where)
    return out


def draw_pullback(saved: Any, out_bar: Any, is_zero: Any) -> tuple[Any, ...]:
    """No cotangent for the generator nor the draw's arguments; refused when the result
    has a gradient and a parameter of the draw holds a float (whether it carries a
    gradient is not known here, and a draw has no derivative adgen defines)."""
    _, fn, args, kwargs = saved
    floats = _float_parameters(args, kwargs)
    if floats and not is_zero(out_bar):
        from adgen.runtime import locate

        name = f"{type(fn.__self__).__name__}.{fn.__name__}"
        raise locate(MissingRuleError(
            f"{name}() draws with float parameters ({', '.join(floats)}) and its result has "
            "a gradient here: adgen cannot tell, for a generator it meets only when the code "
            "runs, whether these parameters carry a gradient, and differentiates no draw "
            "whose parameters do",
            hint="draw with constant parameters and put the float ones outside: write it as "
                 f"{registry.reparameterized_form(fn.__name__)}"))
    return (None,) * (len(args) + len(kwargs))
