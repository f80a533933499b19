"""References for ``scipy.stats.norm``'s methods: ``pdf``, ``logpdf``, ``cdf``, ``logcdf``,
``sf``, ``logsf``, ``ppf`` and ``isf``, with ``loc`` and ``scale`` (by position or keyword),
written with NumPy and ``scipy.special`` (``ndtr``, ``log_ndtr``, ``ndtri``, which have
rules) so that adgen compiles them as it compiles the user's code. A Black-Scholes price
``S * norm.cdf(d1) - K * np.exp(-r * T) * norm.cdf(d2)`` was refused: scipy's methods take
``*args, **kwds``.

``norm.cdf`` is a new bound method at every attribute access: the registry finds a reference
registered for a bound method by its object and name (``registry.defreference``). Registered
by :func:`adgen.rules.registry.load_optional_rules` once the user's code has imported
``scipy.stats`` (adgen never imports scipy itself). As in scipy, a scale that is not positive
gives NaN; the values are scipy's to rounding. A frozen distribution (``norm(mu, s).cdf(x)``)
and the other distributions are not covered.

``scipy.stats.multivariate_normal``'s ``logpdf`` and ``pdf`` (``x`` one point ``(d,)`` or
points ``(..., d)``; ``mean`` None or ``(d,)``; ``cov`` a number, the diagonal ``(d,)`` or the
matrix ``(d, d)``, as scipy reads them) are written with ``np.linalg.slogdet`` and
``np.linalg.inv``: a Gaussian mixture's component, a Gaussian-process marginal likelihood.
Only the covariance's lower triangle is read, as scipy's ``eigh``: a gradient in a covariance
passed in has zeros above the diagonal, as scipy's function has. ``allow_singular=True`` is
refused (scipy's pseudo-inverse); a covariance that is not positive definite gives NaN where
scipy raises.

``scipy.stats.gamma``, ``beta`` and ``t``'s ``logpdf`` and ``pdf`` (the shapes ``a``, ``b``,
``df``, ``loc`` and ``scale`` by position or keyword, all differentiated) are written with
``gammaln``, ``betaln``, ``xlogy`` and ``xlog1py``: ``-inf`` (``pdf`` 0) outside the support,
scipy's values on its edges, NaN for a shape or scale that is not positive. ``t`` with
``df=np.inf`` is refused (write ``norm``). Their ``cdf``, ``sf`` and ``ppf`` (incomplete gamma
and beta functions, differentiated in their shapes nowhere in adgen) are not covered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special, stats

from adgen.rules.composites import refuse_if
from adgen.rules.registry import defreference

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


@defreference(stats.norm.pdf, name="scipy.stats.norm.pdf")
def norm_pdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)  # scipy: NaN where the scale is not positive
    z = (np.asarray(x) - loc) / scale
    return np.exp(-0.5 * (z * z) - _LOG_SQRT_2PI) / scale


@defreference(stats.norm.logpdf, name="scipy.stats.norm.logpdf")
def norm_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    z = (np.asarray(x) - loc) / scale
    return -0.5 * (z * z) - _LOG_SQRT_2PI - np.log(scale)


@defreference(stats.norm.cdf, name="scipy.stats.norm.cdf")
def norm_cdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    return special.ndtr((np.asarray(x) - loc) / scale)


@defreference(stats.norm.logcdf, name="scipy.stats.norm.logcdf")
def norm_logcdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    return special.log_ndtr((np.asarray(x) - loc) / scale)


@defreference(stats.norm.sf, name="scipy.stats.norm.sf")
def norm_sf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    return special.ndtr((loc - np.asarray(x)) / scale)


@defreference(stats.norm.logsf, name="scipy.stats.norm.logsf")
def norm_logsf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    return special.log_ndtr((loc - np.asarray(x)) / scale)


@defreference(stats.norm.ppf, name="scipy.stats.norm.ppf")
def norm_ppf(q: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    return loc + scale * special.ndtri(np.asarray(q))  # NaN outside [0, 1], as scipy


@defreference(stats.norm.isf, name="scipy.stats.norm.isf")
def norm_isf(q: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    return loc - scale * special.ndtri(np.asarray(q))


_MVN = stats.multivariate_normal


@defreference(_MVN.logpdf, name="scipy.stats.multivariate_normal.logpdf")
def multivariate_normal_logpdf(x: Any, mean: Any = None, cov: Any = 1,
                               allow_singular: bool = False) -> Any:
    refuse_if(allow_singular, "scipy.stats.multivariate_normal with allow_singular=True is "
              "not differentiated (scipy's pseudo-inverse): pass a positive definite covariance")
    x = np.asarray(x, dtype=float)
    if mean is not None:
        d = np.size(mean)
    elif np.ndim(cov) > 0:
        d = np.shape(cov)[0]
    else:
        d = 1
    if d == 1 and (np.ndim(x) == 0 or np.shape(x)[-1] != 1):
        x = np.reshape(x, np.shape(x) + (1,))  # scipy: points of one dimension
    if mean is None:
        diff = x
    else:
        diff = x - np.reshape(mean, (d,))
    if np.ndim(cov) == 0:
        cov = cov * np.eye(d)
    elif np.ndim(cov) == 1:
        cov = np.diag(cov)
    else:
        cov = np.tril(cov) + np.transpose(np.tril(cov, -1))  # scipy reads the lower triangle
    sign, logdet = np.linalg.slogdet(cov)
    logdet = np.where(sign > 0, logdet, np.nan)  # scipy raises: not positive definite
    maha = np.sum((diff @ np.linalg.inv(cov)) * diff, axis=-1)
    return -0.5 * (d * np.log(2.0 * np.pi) + logdet + maha)


@defreference(_MVN.pdf, name="scipy.stats.multivariate_normal.pdf")
def multivariate_normal_pdf(x: Any, mean: Any = None, cov: Any = 1,
                            allow_singular: bool = False) -> Any:
    return np.exp(multivariate_normal_logpdf(x, mean, cov, allow_singular))


# (each reference written out: adgen compiles a reference's source and stops at a call of a
# helper of adgen's that is not a reference itself)


@defreference(stats.gamma.logpdf, name="scipy.stats.gamma.logpdf")
def gamma_logpdf(x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)  # scipy: NaN where a parameter is not valid
    a = np.where(a > 0, a, np.nan)
    y = (np.asarray(x) - loc) / scale
    inside = y >= 0
    y = np.where(inside, y, 1.0)  # (no NaN from the log where the value is -inf)
    out = special.xlogy(a - 1.0, y) - y - special.gammaln(a) - np.log(scale)
    # (+ 0.0: a number for a number, as scipy returns, where np.where gives a 0-d array)
    return np.where(inside, out, np.where(np.isnan(a + scale), np.nan, -np.inf)) + 0.0


@defreference(stats.gamma.pdf, name="scipy.stats.gamma.pdf")
def gamma_pdf(x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return np.exp(gamma_logpdf(x, a, loc, scale))


@defreference(stats.beta.logpdf, name="scipy.stats.beta.logpdf")
def beta_logpdf(x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    scale = np.where(scale > 0, scale, np.nan)
    a = np.where(a > 0, a, np.nan)
    b = np.where(b > 0, b, np.nan)
    y = (np.asarray(x) - loc) / scale
    inside = (y >= 0) & (y <= 1)
    y = np.where(inside, y, 0.5)
    out = special.xlogy(a - 1.0, y) + special.xlog1py(b - 1.0, -y) - special.betaln(a, b) - \
        np.log(scale)
    return np.where(inside, out, np.where(np.isnan(a + b + scale), np.nan, -np.inf)) + 0.0


@defreference(stats.beta.pdf, name="scipy.stats.beta.pdf")
def beta_pdf(x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return np.exp(beta_logpdf(x, a, b, loc, scale))


@defreference(stats.t.logpdf, name="scipy.stats.t.logpdf")
def t_logpdf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    refuse_if(np.any(np.isinf(df)), "scipy.stats.t with df=inf is not differentiated: write "
              "scipy.stats.norm for it")
    scale = np.where(scale > 0, scale, np.nan)
    df = np.where(df > 0, df, np.nan)
    y = (np.asarray(x) - loc) / scale
    half = 0.5 * (df + 1.0)
    return special.gammaln(half) - special.gammaln(0.5 * df) - 0.5 * np.log(df * np.pi) - \
        half * np.log1p(y * y / df) - np.log(scale)


@defreference(stats.t.pdf, name="scipy.stats.t.pdf")
def t_pdf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return np.exp(t_logpdf(x, df, loc, scale))


# the frozen distributions (norm(mu, s).logpdf(x)), which call the references above
import adgen.rules.scipy_frozen  # noqa: E402, F401
