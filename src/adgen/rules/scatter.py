"""The rule of ``ufunc_at`` (rules/helpers_scatter.py): ``np.multiply.at``, ``np.maximum.at``
and ``np.minimum.at`` as values. ``np.add.at`` and ``np.subtract.at`` are linear and stay
in-place calls the reverse pass knows (transforms/reverse_stores.py); these three are not, and
their pullbacks read the array before the update, so transforms/lower_mutation.py writes
``np.maximum.at(x, i, v)`` as ``t = ufunc_at(np.maximum, x, i, v); x[...] = t``: a store that
overwrites what the pullback reads, saved under mutation="save" and refused under "strict".

A position named several times gets every update (``np.multiply.at(x, [0, 0], v)`` multiplies
``x[0]`` by ``v[0] * v[1]``), and the pullback follows each: the product of the other factors
at that position, or the share of the extreme among ties.
"""

from __future__ import annotations

from typing import Any

from adgen.rules.helpers import ufunc_at, ufunc_at_jvp, ufunc_at_vjp
from adgen.rules.registry import defjvp, defrefusal, defvjp


@defvjp(ufunc_at, "ufunc, a, indices, b", diff="a, b", reads="ufunc, a, indices, b, out",
        name="numpy.ufunc.at")
def ufunc_at_rule(g: Any, out: Any, ufunc: Any, a: Any, indices: Any, b: Any) -> Any:
    return (ufunc_at_vjp(g, out, ufunc, a, indices, b, "a"),
            ufunc_at_vjp(g, out, ufunc, a, indices, b, "b"))


@defjvp(ufunc_at)
def ufunc_at_tangent(d: Any, out: Any, ufunc: Any, a: Any, indices: Any, b: Any) -> Any:
    # (forward mode only: reverse mode over it, hvp or hessian, has no rule for the helper)
    return (ufunc_at_jvp(d, None, out, ufunc, a, indices, b),
            ufunc_at_jvp(None, d, out, ufunc, a, indices, b))


defrefusal(ufunc_at_jvp, "second derivatives (hessian, hvp, a gradient of a jvp) through "
           "np.multiply.at, np.maximum.at or np.minimum.at are not supported",
           hint="write the update as indexed assignments in a loop, which second derivatives "
                "follow (for k in range(len(i)): x[i[k]] = x[i[k]] * v[k], or = "
                "np.maximum(x[i[k]], v[k])), or take first derivatives (grad, jvp)")
