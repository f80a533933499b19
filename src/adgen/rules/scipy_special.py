"""Rules for ``scipy.special``: the logistic, log-sum-exp and softmax family, and erf.

Registered by :func:`adgen.rules.registry.load_optional_rules` once the user's code has
imported ``scipy.special`` (adgen never imports scipy itself: it is an optional extra). The
pullbacks use NumPy only, so generated code and ``-o`` modules need no scipy beyond what the
user's function calls.

``logsumexp`` is covered without ``b=`` and ``return_sign=`` (those are refused when the call
is bound); ``softmax`` and ``log_softmax`` with any ``axis``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from adgen.rules.helpers import sum_vjp
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


defjvp_kind("elementwise", special.expit, special.logit, special.erf, special.erfc,
            special.ndtr, special.log_ndtr)

# --------------------------------------------------------------------------------------------
# Log-sum-exp and softmax along axes


@defvjp(special.logsumexp, "a, axis=None, *, keepdims=False", diff="a",
        reads="a, out, axis, keepdims", name="scipy.special.logsumexp")
def logsumexp(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    # the softmax of a along axis, times g spread back over the reduced axes
    return sum_vjp(g, np.shape(a), axis, keepdims) * \
        np.exp(a - sum_vjp(out, np.shape(a), axis, keepdims))


@defjvp(special.logsumexp)
def logsumexp_jvp(d: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return np.sum(np.exp(a - sum_vjp(out, np.shape(a), axis, keepdims)) * d, axis=axis,
                  keepdims=keepdims)


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
