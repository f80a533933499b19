"""Rule helpers for ``scipy.special``: the digamma and polygamma functions, in NumPy alone.

The derivative of ``gammaln`` is ``digamma``, that of ``digamma`` is ``polygamma(1, .)``, and
that of ``polygamma(n, .)`` is ``polygamma(n + 1, .)``. Generated code and ``-o`` modules
import numpy and these helpers only (adgen never imports scipy), so the pullbacks of the
``scipy.special`` rules (rules/scipy_special.py) compute them here:

- ``special_digamma``: the recurrence psi(x) = psi(x + 1) - 1 / x moves x up to 10 or more, where the
  asymptotic series psi(y) = log y - 1 / (2y) - sum B_2k / (2k y^2k) (seven terms) is exact
  to rounding; a negative x goes through the reflection psi(x) = psi(1 - x) - pi / tan(pi x).
- ``special_polygamma(n, x)``, n >= 1: the same recurrence, psi_n(x) = psi_n(x + 1) -
  (-1)^n n! /
  x^(n + 1), then the asymptotic series (-1)^(n + 1) [(n - 1)! / y^n + n! / (2 y^(n + 1)) +
  sum B_2k (2k + n - 1)! / ((2k)! y^(2k + n))] from y >= n + 10.

At the poles (0 and the negative integers) they give inf or nan, as the functions have no
value there. Their names say "special" so that no name of the user's (a ``digamma`` of
their own) meets them in generated code. Checked against scipy in
tests/test_scipy_special_gamma.py.

The Bessel functions, the regularized incomplete gamma function and the Hurwitz zeta function
(rules/scipy_special_orders.py) have derivatives that are the same functions again, which
NumPy does not compute: their helpers here (``special_bessel``, ``special_gamma_density``,
``special_zeta``) import ``scipy.special`` when they run, which a
program calling those functions has. ``special_refused(what)`` raises the refusal their
rules give for a derivative in a Bessel function's order, the incomplete gamma function's
shape or the zeta function's exponent (rather than a zero one).

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
"""

import numpy as np

from adgen.rules.helpers_core import unsupported

__all__ = [
    "special_bessel",
    "special_digamma",
    "special_gamma_density",
    "special_polygamma",
    "special_refused",
    "special_zeta",
]


def special_digamma(x: object) -> object:
    """psi(x) = d/dx log Gamma(x), elementwise (a float64 number for a number).

    Raises:
        RuleError: for complex values (scipy's psi takes them; these series are real).
    """
    if np.iscomplexobj(x):
        unsupported("the derivative of digamma/gammaln at complex values is not computed "
                    "(adgen's digamma is real)")
    x = np.asarray(x, dtype=np.float64)
    # the reflection for negative x: psi(x) = psi(1 - x) - pi / tan(pi x)
    neg = x < 0.0
    y = np.where(neg, 1.0 - x, x)
    acc = np.zeros_like(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(10):  # y < 10 goes up, one step at a time, to 10 or more
            low = y < 10.0
            acc = acc - np.where(low, 1.0 / y, 0.0)
            y = np.where(low, y + 1.0, y)
        r = 1.0 / (y * y)
        # the Bernoulli terms B_2k / (2k y^2k), k = 1..7, in Horner form in 1 / y^2
        series = r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (
            1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760 - r / 12.0))))))
        value = np.log(y) - 0.5 / y - series + acc
        value = np.where(neg, value - np.pi / np.tan(np.pi * x), value)
    return value[()] if value.ndim == 0 else value


def special_polygamma(n: object, x: object) -> object:
    """The n-th derivative of digamma at x, elementwise (``n`` an int >= 0, or an array of
    them broadcast with ``x``).

    Raises:
        RuleError: for a negative or non-integer ``n``, a complex ``x``, or an ``x`` below
            -100000 with n >= 1 (the recurrence would take that many steps).
    """
    n_arr = np.asarray(n)
    if n_arr.ndim:
        n_b, x_b = np.broadcast_arrays(n_arr, np.asarray(x, dtype=np.float64))
        out = np.empty(x_b.shape)
        for k in np.unique(n_b):  # one order at a time
            mask = n_b == k
            out[mask] = special_polygamma(k, x_b[mask])
        return out
    order = int(n_arr)
    if order != n_arr or order < 0:
        unsupported(f"polygamma: the order n must be an int >= 0, not {n!r}")
    if order == 0:
        return special_digamma(x)
    if np.iscomplexobj(x):
        unsupported("the derivative of polygamma at complex values is not computed "
                    "(adgen's polygamma is real)")
    x = np.asarray(x, dtype=np.float64)
    start = 10.0 + order  # where the asymptotic series is exact to rounding
    low_x = float(np.min(x, initial=start))
    if low_x < -100000.0:
        unsupported(f"polygamma({order}, x) for x = {low_x} below -100000 is not computed")
    steps = int(np.ceil(start - low_x)) if low_x < start else 0
    fact = float(np.prod(np.arange(1, order + 1, dtype=np.float64)))  # n!
    sign = 1.0 if order % 2 else -1.0  # (-1)^(n + 1)
    y = x
    acc = np.zeros_like(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(steps):
            low = y < start
            # psi_n(y) = psi_n(y + 1) + (-1)^(n + 1) n! / y^(n + 1)
            acc = acc + np.where(low, 1.0 / y ** (order + 1), 0.0)
            y = np.where(low, y + 1.0, y)
        # (-1)^(n+1) [(n-1)!/y^n + n!/(2 y^(n+1)) + sum_k B_2k (2k+n-1)!/((2k)! y^(2k+n))]
        bernoulli = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6)
        series = (fact / order) / y ** order + fact / (2.0 * y ** (order + 1))
        coef = fact / order  # (2k + n - 1)! / (2k)! built up from (n - 1)!
        for k, b in enumerate(bernoulli, start=1):
            coef = coef * (2 * k + order - 2) * (2 * k + order - 1) / ((2 * k - 1) * (2 * k))
            series = series + b * coef / y ** (2 * k + order)
        value = sign * (series + fact * acc)
    return value[()] if value.ndim == 0 else value


def special_bessel(kind: str, v: object, x: object, n: int = 0) -> object:
    """The ``n``-th derivative in ``x`` of ``scipy.special``'s Bessel function ``kind``
    (``"jv"``, ``"yv"``, ``"iv"``, ``"kv"``, ``"ive"``, ``"kve"``) of order ``v`` at ``x``.

    The recurrences: J_v' = (J_(v-1) - J_(v+1)) / 2, the same for Y; I_v' = (I_(v-1) +
    I_(v+1)) / 2; K_v' = -(K_(v-1) + K_(v+1)) / 2; the scaled ive = I_v e^-|x| and kve = K_v
    e^x add -sign(x) ive and + kve. Each step of ``n`` applies them once more (3^n calls).
    """
    from scipy import special

    if n == 0:
        return getattr(special, kind)(v, x)
    if kind == "ive" and np.iscomplexobj(x):
        # ive(v, z) = iv(v, z) e^-|Re z|: not holomorphic in a complex z, so no g * f'(z)
        # (the recurrence below, with np.sign of a complex z, was silently wrong there)
        unsupported("scipy.special.ive of a complex z has no derivative in adgen (its "
                    "scaling e^-|Re z| is not complex-differentiable): write "
                    "scipy.special.iv(v, z) * np.exp(-np.abs(z.real))")
    half = -0.5 if kind in ("kv", "kve") else 0.5
    other = -1.0 if kind in ("jv", "yv") else 1.0
    value = half * (special_bessel(kind, v - 1, x, n - 1) +
                    other * special_bessel(kind, v + 1, x, n - 1))
    if kind == "ive":
        value = value - np.sign(x) * special_bessel(kind, v, x, n - 1)
    elif kind == "kve":
        value = value + special_bessel(kind, v, x, n - 1)
    return value


def special_gamma_density(a: object, x: object) -> object:
    """x^(a - 1) e^-x / Gamma(a): the derivative in ``x`` of ``gammainc(a, x)`` (0 where x is
    0 and a > 1, as the limit; inf at 0 for a < 1; NaN below 0 and for a <= 0)."""
    from scipy import special

    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.exp(special.xlogy(np.subtract(a, 1.0), x) - x - special.gammaln(a))
        value = np.where((np.asarray(x) < 0) | (np.asarray(a) <= 0), np.nan, value)
    return value[()] if np.ndim(value) == 0 else value


def special_zeta(x: object, q: object) -> object:
    """``scipy.special.zeta(x, q)`` (the Riemann zeta function when ``q`` is None)."""
    from scipy import special

    return special.zeta(x, q)


def special_refused(what: str) -> None:
    """Raises the refusal of a derivative in ``what``.

    Raises:
        RuleError: always.
    """
    unsupported(f"{what} has no derivative in adgen: pass a constant there (a number the "
                "function's arguments do not change), or wrap it in adgen.stop_gradient")

