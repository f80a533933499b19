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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special, stats

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
