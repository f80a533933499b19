"""``scipy.special`` functions of an order, a shape or an exponent, differentiated in their
other argument only: the Bessel functions (``j0``, ``j1``, ``y0``, ``y1``, ``i0``, ``i0e``,
``i1``, ``i1e``, ``k0``, ``k0e``, ``k1``, ``k1e``; ``jv``, ``yv``, ``iv``, ``kv``, ``ive``,
``kve`` in ``z``), the regularized incomplete gamma functions ``gammainc`` / ``gammaincc`` in
``x`` and the Hurwitz zeta function ``zeta(x, q)`` in ``q``.

The pullbacks call the helpers of rules/helpers_special.py, whose rules below are the same
functions again (a Bessel function's derivative is Bessel functions of the orders next to it,
``special_bessel(kind, v, x, n + 1)``; the incomplete gamma function's is the gamma density,
whose own is itself times (a - 1) / x - 1; zeta's in q is -x zeta(x + 1, q)), so hessians and
jvps of gradients follow them. As in JAX, the order ``v``, the shape ``a`` and zeta's
exponent ``x`` are not differentiated: they are outside each rule's ``diff`` and listed in
``rules.nondiff_params.REFUSED``, so a derivative flowing there is refused at the user's line
(in grad, jvp and hessian), naming the argument, rather than given a zero one, and a constant
order (``jv(1.5, x)`` in a helper given 1.5) differentiates in the other argument.

Loaded by rules/scipy_special.py (once the user's code imported ``scipy.special``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from adgen.rules import helpers_special
from adgen.rules.helpers import (
    special_bessel,
    special_gamma_density,
    special_zeta,
    unbroadcast,
)
from adgen.rules.registry import defjvp_kind, defvjp

# --------------------------------------------------------------------------------------------
# Bessel functions of orders 0 and 1


@defvjp(special.j0, "x", reads="x", name="scipy.special.j0")
def j0(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("jv", 0, x, 1)


@defvjp(special.j1, "x", reads="x", name="scipy.special.j1")
def j1(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("jv", 1, x, 1)


@defvjp(special.y0, "x", reads="x", name="scipy.special.y0")
def y0(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("yv", 0, x, 1)


@defvjp(special.y1, "x", reads="x", name="scipy.special.y1")
def y1(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("yv", 1, x, 1)


@defvjp(special.i0, "x", reads="x", name="scipy.special.i0")
def i0(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("iv", 0, x, 1)


@defvjp(special.i0e, "x", reads="x", name="scipy.special.i0e")
def i0e(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("ive", 0, x, 1)


@defvjp(special.i1, "x", reads="x", name="scipy.special.i1")
def i1(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("iv", 1, x, 1)


@defvjp(special.i1e, "x", reads="x", name="scipy.special.i1e")
def i1e(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("ive", 1, x, 1)


@defvjp(special.k0, "x", reads="x", name="scipy.special.k0")
def k0(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("kv", 0, x, 1)


@defvjp(special.k0e, "x", reads="x", name="scipy.special.k0e")
def k0e(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("kve", 0, x, 1)


@defvjp(special.k1, "x", reads="x", name="scipy.special.k1")
def k1(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("kv", 1, x, 1)


@defvjp(special.k1e, "x", reads="x", name="scipy.special.k1e")
def k1e(g: Any, out: Any, x: Any) -> Any:
    return g * special_bessel("kve", 1, x, 1)


# --------------------------------------------------------------------------------------------
# Bessel functions of any order v, in z (a derivative in v refused)


@defvjp(special.jv, "v, z", diff="z", reads="v, z", name="scipy.special.jv")
def jv(g: Any, out: Any, v: Any, z: Any) -> Any:
    return unbroadcast(g * special_bessel("jv", v, z, 1), np.shape(z))


@defvjp(special.yv, "v, z", diff="z", reads="v, z", name="scipy.special.yv")
def yv(g: Any, out: Any, v: Any, z: Any) -> Any:
    return unbroadcast(g * special_bessel("yv", v, z, 1), np.shape(z))


@defvjp(special.iv, "v, z", diff="z", reads="v, z", name="scipy.special.iv")
def iv(g: Any, out: Any, v: Any, z: Any) -> Any:
    return unbroadcast(g * special_bessel("iv", v, z, 1), np.shape(z))


@defvjp(special.kv, "v, z", diff="z", reads="v, z", name="scipy.special.kv")
def kv(g: Any, out: Any, v: Any, z: Any) -> Any:
    return unbroadcast(g * special_bessel("kv", v, z, 1), np.shape(z))


@defvjp(special.ive, "v, z", diff="z", reads="v, z", name="scipy.special.ive")
def ive(g: Any, out: Any, v: Any, z: Any) -> Any:
    return unbroadcast(g * special_bessel("ive", v, z, 1), np.shape(z))


@defvjp(special.kve, "v, z", diff="z", reads="v, z", name="scipy.special.kve")
def kve(g: Any, out: Any, v: Any, z: Any) -> Any:
    return unbroadcast(g * special_bessel("kve", v, z, 1), np.shape(z))


# --------------------------------------------------------------------------------------------
# The regularized incomplete gamma functions in x (a derivative in a refused), zeta in q


@defvjp(special.gammainc, "a, x", diff="x", reads="a, x", name="scipy.special.gammainc")
def gammainc(g: Any, out: Any, a: Any, x: Any) -> Any:
    return unbroadcast(g * special_gamma_density(a, x), np.shape(x))


@defvjp(special.gammaincc, "a, x", diff="x", reads="a, x", name="scipy.special.gammaincc")
def gammaincc(g: Any, out: Any, a: Any, x: Any) -> Any:
    return unbroadcast(-g * special_gamma_density(a, x), np.shape(x))


@defvjp(special.zeta, "x, q=None", diff="q", reads="x, q", name="scipy.special.zeta")
def zeta(g: Any, out: Any, x: Any, q: Any) -> Any:
    return unbroadcast(-g * x * special_zeta(x + 1.0, q), np.shape(q))


defjvp_kind("elementwise", special.j0, special.j1, special.y0, special.y1, special.i0,
            special.i0e, special.i1, special.i1e, special.k0, special.k0e, special.k1,
            special.k1e, special.jv, special.yv, special.iv, special.kv, special.ive,
            special.kve, special.gammainc, special.gammaincc, special.zeta)

# --------------------------------------------------------------------------------------------
# The helpers the pullbacks above call, differentiated in turn (hessian, grad of grad, jvp of a
# gradient). Their order, shape and exponent are constants there: a derivative in one was
# refused by the first-order rule above.


@defvjp(helpers_special.special_bessel, "kind, v, x, n=0", diff="x", reads="kind, v, x, n",
        name="adgen.runtime.special_bessel")
def bessel_helper(g: Any, out: Any, kind: Any, v: Any, x: Any, n: Any) -> Any:
    return unbroadcast(g * special_bessel(kind, v, x, n + 1), np.shape(x))


@defvjp(helpers_special.special_gamma_density, "a, x", diff="x", reads="a, x, out",
        name="adgen.runtime.special_gamma_density")
def gamma_density_helper(g: Any, out: Any, a: Any, x: Any) -> Any:
    return unbroadcast(g * out * ((a - 1.0) / x - 1.0), np.shape(x))


@defvjp(helpers_special.special_zeta, "x, q", diff="q", reads="x, q",
        name="adgen.runtime.special_zeta")
def zeta_helper(g: Any, out: Any, x: Any, q: Any) -> Any:
    return unbroadcast(-g * x * special_zeta(x + 1.0, q), np.shape(q))


defjvp_kind("elementwise", helpers_special.special_bessel,
            helpers_special.special_gamma_density, helpers_special.special_zeta)
