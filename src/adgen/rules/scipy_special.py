"""Rules for ``scipy.special``: the logistic, log-sum-exp and softmax family, erf, the
log-gamma family (gammaln, betaln, digamma, polygamma) and xlogy / xlog1py; gamma, beta,
expm1, log1p, cbrt, exp2, entr, rel_entr, kl_div, erfinv, erfcinv, erfcx, dawsn and expi;
log_expit, loggamma (real), rgamma, exprel, cosm1, huber, pseudo_huber, boxcox, boxcox1p and
exp1.

Registered by :func:`adgen.rules.registry.load_optional_rules` once the user's code has
imported ``scipy.special`` (adgen never imports scipy itself: it is an optional extra). The
pullbacks use NumPy only, so generated code and ``-o`` modules need no scipy beyond what the
user's function calls: the derivatives of the log-gamma family are digamma and polygamma,
which rules/helpers_special.py computes in NumPy (and which have rules of their own below,
so that second order differentiates those pullbacks too).

``logsumexp`` is covered with ``axis``, ``b`` (weights broadcast against ``a``, both
differentiated) and ``keepdims``; ``return_sign=`` is refused when the call is bound (its
sign has no derivative; the hint says how to take it apart). ``softmax`` and
``log_softmax`` with any ``axis``. ``xlogy`` and ``xlog1py`` differentiate as JAX's do:
log(y) (log1p(y)) for x and x / y (x / (1 + y)) for y, also where x is 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from adgen.rules import helpers_special
from adgen.rules.helpers import special_digamma, special_polygamma, sum_vjp, unbroadcast
from adgen.rules.registry import defjvp, defjvp_kind, defvjp

# --------------------------------------------------------------------------------------------
# Elementwise (ufuncs)


@defvjp(special.expit, "x", reads="out", name="scipy.special.expit")
def expit(g: Any, out: Any, x: Any) -> Any:
    return g * out * (1.0 - out)


@defvjp(special.logit, "x", reads="x", name="scipy.special.logit")
def logit(g: Any, out: Any, x: Any) -> Any:
    return g / (x * (1.0 - x))


@defvjp(special.erf, "z", reads="z", name="scipy.special.erf")
def erf(g: Any, out: Any, z: Any) -> Any:
    return g * (2.0 / np.sqrt(np.pi)) * np.exp(-(z * z))


@defvjp(special.erfc, "x", reads="x", name="scipy.special.erfc")
def erfc(g: Any, out: Any, x: Any) -> Any:
    return g * (-2.0 / np.sqrt(np.pi)) * np.exp(-(x * x))


@defvjp(special.ndtr, "x", reads="x", name="scipy.special.ndtr")
def ndtr(g: Any, out: Any, x: Any) -> Any:
    return g * np.exp(-0.5 * (x * x)) / np.sqrt(2.0 * np.pi)


@defvjp(special.log_ndtr, "x", reads="x, out", name="scipy.special.log_ndtr")
def log_ndtr(g: Any, out: Any, x: Any) -> Any:
    # the normal density over its distribution function, taken in logs (no 0 / 0 far left)
    return g * np.exp(-0.5 * (x * x) - out) / np.sqrt(2.0 * np.pi)


@defvjp(special.ndtri, "y", reads="out", name="scipy.special.ndtri")
def ndtri(g: Any, out: Any, y: Any) -> Any:
    # the inverse of ndtr: one over the normal density at the result
    return g * np.sqrt(2.0 * np.pi) * np.exp(0.5 * (out * out))


@defvjp(special.gammaln, "x", reads="x", name="scipy.special.gammaln")
def gammaln(g: Any, out: Any, x: Any) -> Any:
    return g * special_digamma(x)


# (scipy.special.psi is the same ufunc)
@defvjp(special.digamma, "z", reads="z", name="scipy.special.digamma")
def digamma_(g: Any, out: Any, z: Any) -> Any:
    return g * special_polygamma(1, z)


@defvjp(special.polygamma, "n, x", diff="x", reads="n, x", name="scipy.special.polygamma")
def polygamma_(g: Any, out: Any, n: Any, x: Any) -> Any:
    # (an array of orders n broadcasts x: its cotangent sums back to x's shape)
    return unbroadcast(g * special_polygamma(n + 1, x), np.shape(x))


@defvjp(special.betaln, "a, b", reads="a, b", name="scipy.special.betaln")
def betaln(g: Any, out: Any, a: Any, b: Any) -> Any:
    return (unbroadcast(g * (special_digamma(a) - special_digamma(a + b)), np.shape(a)),
            unbroadcast(g * (special_digamma(b) - special_digamma(a + b)), np.shape(b)))


@defvjp(special.xlogy, "x, y", reads="x, y", name="scipy.special.xlogy")
def xlogy(g: Any, out: Any, x: Any, y: Any) -> Any:
    return unbroadcast(g * np.log(y), np.shape(x)), unbroadcast(g * x / y, np.shape(y))


@defvjp(special.xlog1py, "x, y", reads="x, y", name="scipy.special.xlog1py")
def xlog1py(g: Any, out: Any, x: Any, y: Any) -> Any:
    return (unbroadcast(g * np.log1p(y), np.shape(x)),
            unbroadcast(g * x / (1.0 + y), np.shape(y)))


defjvp_kind("elementwise", special.expit, special.logit, special.erf, special.erfc,
            special.ndtr, special.log_ndtr, special.ndtri, special.gammaln, special.digamma,
            special.polygamma, special.betaln, special.xlogy, special.xlog1py)

# Since session 24: more elementwise functions whose derivatives NumPy computes (and
# digamma, for gamma and beta)


@defvjp(special.expm1, "x", reads="out", name="scipy.special.expm1")
def expm1(g: Any, out: Any, x: Any) -> Any:
    return g * (out + 1.0)


@defvjp(special.log1p, "x", reads="x", name="scipy.special.log1p")
def log1p(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 + x)


@defvjp(special.cbrt, "x", reads="out", name="scipy.special.cbrt")
def cbrt(g: Any, out: Any, x: Any) -> Any:
    return g / (3.0 * out * out)


@defvjp(special.exp2, "x", reads="out", name="scipy.special.exp2")
def exp2(g: Any, out: Any, x: Any) -> Any:
    return g * out * np.log(2.0)


@defvjp(special.gamma, "x", reads="x, out", name="scipy.special.gamma")
def gamma(g: Any, out: Any, x: Any) -> Any:
    return g * out * special_digamma(x)


@defvjp(special.beta, "a, b", reads="a, b, out", name="scipy.special.beta")
def beta(g: Any, out: Any, a: Any, b: Any) -> Any:
    return (unbroadcast(g * out * (special_digamma(a) - special_digamma(a + b)), np.shape(a)),
            unbroadcast(g * out * (special_digamma(b) - special_digamma(a + b)), np.shape(b)))


@defvjp(special.entr, "x", reads="x", name="scipy.special.entr")
def entr(g: Any, out: Any, x: Any) -> Any:
    return -g * (np.log(x) + 1.0)  # (-x log x for x > 0)


@defvjp(special.rel_entr, "x, y", reads="x, y", name="scipy.special.rel_entr")
def rel_entr(g: Any, out: Any, x: Any, y: Any) -> Any:
    return (unbroadcast(g * (np.log(x / y) + 1.0), np.shape(x)),
            unbroadcast(-g * x / y, np.shape(y)))


@defvjp(special.kl_div, "x, y", reads="x, y", name="scipy.special.kl_div")
def kl_div(g: Any, out: Any, x: Any, y: Any) -> Any:
    return (unbroadcast(g * np.log(x / y), np.shape(x)),
            unbroadcast(g * (1.0 - x / y), np.shape(y)))


@defvjp(special.erfinv, "y", reads="out", name="scipy.special.erfinv")
def erfinv(g: Any, out: Any, y: Any) -> Any:
    return g * (np.sqrt(np.pi) / 2.0) * np.exp(out * out)


@defvjp(special.erfcinv, "y", reads="out", name="scipy.special.erfcinv")
def erfcinv(g: Any, out: Any, y: Any) -> Any:
    return g * (-np.sqrt(np.pi) / 2.0) * np.exp(out * out)


@defvjp(special.erfcx, "x", reads="x, out", name="scipy.special.erfcx")
def erfcx(g: Any, out: Any, x: Any) -> Any:
    return g * (2.0 * x * out - 2.0 / np.sqrt(np.pi))


@defvjp(special.dawsn, "x", reads="x, out", name="scipy.special.dawsn")
def dawsn(g: Any, out: Any, x: Any) -> Any:
    return g * (1.0 - 2.0 * x * out)


@defvjp(special.expi, "x", reads="x", name="scipy.special.expi")
def expi(g: Any, out: Any, x: Any) -> Any:
    return g * np.exp(x) / x


if hasattr(special, "softplus"):  # (SciPy >= 1.15: np.logaddexp(0, x, **kwargs))

    @defvjp(special.softplus, "x", reads="out", name="scipy.special.softplus")
    def softplus(g: Any, out: Any, x: Any) -> Any:
        # expit(x) = 1 - exp(-softplus(x)), exact at both ends (exp(x) far left, 1 far right)
        return g * -np.expm1(-out)

    defjvp_kind("elementwise", special.softplus)

defjvp_kind("elementwise", special.expm1, special.log1p, special.cbrt, special.exp2,
            special.gamma, special.beta, special.entr, special.rel_entr, special.kl_div,
            special.erfinv, special.erfcinv, special.erfcx, special.dawsn, special.expi)

# Since session 29: the log-sigmoid, loggamma and 1 / gamma, exprel and cosm1, the robust
# losses (huber, pseudo_huber), the Box-Cox transforms and the exponential integral E1


@defvjp(special.log_expit, "x", reads="out", name="scipy.special.log_expit")
def log_expit(g: Any, out: Any, x: Any) -> Any:
    # 1 - expit(x) = -expm1(log_expit(x)), exact at both ends (1 far left, exp(-x) far right)
    return g * -np.expm1(out)


# (real arguments: for x > 0 it is gammaln; the pullback reads digamma, as gammaln's)
@defvjp(special.loggamma, "z", reads="z", name="scipy.special.loggamma")
def loggamma(g: Any, out: Any, z: Any) -> Any:
    return g * special_digamma(z)


@defvjp(special.rgamma, "z", reads="z, out", name="scipy.special.rgamma")
def rgamma(g: Any, out: Any, z: Any) -> Any:
    return -g * out * special_digamma(z)


@defvjp(special.exprel, "x", reads="x, out", name="scipy.special.exprel")
def exprel(g: Any, out: Any, x: Any) -> Any:
    # (exp(x) - exprel(x)) / x, and its series 1/2 + x/3 + x^2/8 + x^3/30 near 0 (where the
    # difference cancels)
    return g * np.where(np.abs(x) < 1e-3, 0.5 + x * (1.0 / 3.0 + x * (0.125 + x / 30.0)),
                        (np.exp(x) - out) / np.where(np.abs(x) < 1e-3, 1.0, x))


@defvjp(special.cosm1, "x", reads="x", name="scipy.special.cosm1")
def cosm1(g: Any, out: Any, x: Any) -> Any:
    return -g * np.sin(x)


# huber(delta, r): r^2 / 2 inside |r| <= delta, delta (|r| - delta / 2) outside
@defvjp(special.huber, "delta, r", reads="delta, r", name="scipy.special.huber")
def huber(g: Any, out: Any, delta: Any, r: Any) -> Any:
    return (unbroadcast(g * np.where(np.abs(r) <= delta, 0.0, np.abs(r) - delta),
                        np.shape(delta)),
            unbroadcast(g * np.where(np.abs(r) <= delta, r, delta * np.sign(r)), np.shape(r)))


# pseudo_huber(delta, r) = delta^2 (s - 1), s = sqrt(1 + (r / delta)^2) = 1 + out / delta^2
@defvjp(special.pseudo_huber, "delta, r", reads="delta, r, out",
        name="scipy.special.pseudo_huber")
def pseudo_huber(g: Any, out: Any, delta: Any, r: Any) -> Any:
    return (unbroadcast(g * (2.0 * out / delta - r * r / (delta * (1.0 + out / (delta * delta)))),
                        np.shape(delta)),
            unbroadcast(g * r / (1.0 + out / (delta * delta)), np.shape(r)))


# boxcox(x, lmbda) = (x^lmbda - 1) / lmbda, log(x) at lmbda = 0: d/dx = x^(lmbda - 1),
# d/dlmbda = (x^lmbda log x - out) / lmbda, log(x)^2 / 2 at lmbda = 0 (boxcox1p: of 1 + x)
@defvjp(special.boxcox, "x, lmbda", reads="x, lmbda, out", name="scipy.special.boxcox")
def boxcox(g: Any, out: Any, x: Any, lmbda: Any) -> Any:
    return (unbroadcast(g * x ** (lmbda - 1.0), np.shape(x)),
            unbroadcast(g * np.where(lmbda == 0, 0.5 * np.log(x) ** 2,
                                     (x ** lmbda * np.log(x) - out) /
                                     np.where(lmbda == 0, 1.0, lmbda)), np.shape(lmbda)))


@defvjp(special.boxcox1p, "x, lmbda", reads="x, lmbda, out", name="scipy.special.boxcox1p")
def boxcox1p(g: Any, out: Any, x: Any, lmbda: Any) -> Any:
    return (unbroadcast(g * (1.0 + x) ** (lmbda - 1.0), np.shape(x)),
            unbroadcast(g * np.where(lmbda == 0, 0.5 * np.log1p(x) ** 2,
                                     ((1.0 + x) ** lmbda * np.log1p(x) - out) /
                                     np.where(lmbda == 0, 1.0, lmbda)), np.shape(lmbda)))


@defvjp(special.exp1, "z", reads="z", name="scipy.special.exp1")
def exp1(g: Any, out: Any, z: Any) -> Any:
    return -g * np.exp(-z) / z


defjvp_kind("elementwise", special.log_expit, special.loggamma, special.rgamma, special.exprel,
            special.cosm1, special.huber, special.pseudo_huber, special.boxcox,
            special.boxcox1p, special.exp1)

# The helpers the pullbacks above call, differentiated in turn (hessian, grad of grad, jvp of
# a gradient): digamma' = polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .).


@defvjp(helpers_special.special_digamma, "x", reads="x", name="adgen.runtime.special_digamma")
def digamma_helper(g: Any, out: Any, x: Any) -> Any:
    return g * special_polygamma(1, x)


@defvjp(helpers_special.special_polygamma, "n, x", diff="x", reads="n, x",
        name="adgen.runtime.special_polygamma")
def polygamma_helper(g: Any, out: Any, n: Any, x: Any) -> Any:
    return unbroadcast(g * special_polygamma(n + 1, x), np.shape(x))


defjvp_kind("elementwise", helpers_special.special_digamma, helpers_special.special_polygamma)

# --------------------------------------------------------------------------------------------
# Log-sum-exp and softmax along axes


# b is None (no weights) or weights broadcast against a: "S if b is None else ..." is the
# shape of the weighted terms (the template's test is settled when the call leaves b out)
@defvjp(special.logsumexp, "a, axis=None, b=None, keepdims=False", diff="a, b",
        reads="a, b, out, axis, keepdims", name="scipy.special.logsumexp")
def logsumexp(g: Any, out: Any, a: Any, axis: Any, b: Any, keepdims: Any) -> Any:
    # the (weighted) softmax of a along axis, times g spread back over the reduced axes;
    # b's cotangent is the softmax's unweighted part
    return (
        unbroadcast(
            sum_vjp(g, np.shape(a) if b is None else
                    np.broadcast_shapes(np.shape(a), np.shape(b)), axis, keepdims) *
            (1.0 if b is None else b) *
            np.exp(a - sum_vjp(out, np.shape(a) if b is None else
                               np.broadcast_shapes(np.shape(a), np.shape(b)), axis, keepdims)),
            np.shape(a)),
        unbroadcast(
            sum_vjp(g, np.shape(a) if b is None else
                    np.broadcast_shapes(np.shape(a), np.shape(b)), axis, keepdims) *
            np.exp(a - sum_vjp(out, np.shape(a) if b is None else
                               np.broadcast_shapes(np.shape(a), np.shape(b)), axis, keepdims)),
            np.shape(b)))


@defjvp(special.logsumexp)
def logsumexp_jvp(d: Any, out: Any, a: Any, axis: Any, b: Any, keepdims: Any) -> Any:
    return (
        np.sum((1.0 if b is None else b) * d *
               np.exp(a - sum_vjp(out, np.shape(a) if b is None else
                                  np.broadcast_shapes(np.shape(a), np.shape(b)), axis,
                                  keepdims)), axis=axis, keepdims=keepdims),
        np.sum(d * np.exp(a - sum_vjp(out, np.shape(a) if b is None else
                                      np.broadcast_shapes(np.shape(a), np.shape(b)), axis,
                                      keepdims)), axis=axis, keepdims=keepdims))


@defvjp(special.softmax, "x, axis=None", diff="x", reads="out, axis",
        name="scipy.special.softmax")
def softmax(g: Any, out: Any, x: Any, axis: Any) -> Any:
    return out * (g - np.sum(g * out, axis=axis, keepdims=True))


@defjvp(special.softmax)
def softmax_jvp(d: Any, out: Any, x: Any, axis: Any) -> Any:
    return out * (d - np.sum(d * out, axis=axis, keepdims=True))


@defvjp(special.log_softmax, "x, axis=None", diff="x", reads="out, axis",
        name="scipy.special.log_softmax")
def log_softmax(g: Any, out: Any, x: Any, axis: Any) -> Any:
    return g - np.exp(out) * np.sum(g, axis=axis, keepdims=True)


@defjvp(special.log_softmax)
def log_softmax_jvp(d: Any, out: Any, x: Any, axis: Any) -> Any:
    return d - np.sum(np.exp(out) * d, axis=axis, keepdims=True)


# The Bessel functions, gammainc / gammaincc and zeta: rules/scipy_special_orders.py
from adgen.rules import scipy_special_orders  # noqa: E402, F401
