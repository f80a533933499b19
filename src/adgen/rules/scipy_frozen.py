"""Frozen scipy distributions made inside a differentiated function: ``d = norm(mu, s)``
then ``d.logpdf(x)``, ``d.cdf(x)``; ``gamma(a, scale=th)``, ``beta(a, b)``, ``t(df)`` and
``multivariate_normal(mean, cov)`` the same way.

Calling a distribution (``scipy.stats.norm(mu, s)``) runs scipy's ``rv_generic.__call__``,
which takes ``**kwds`` and builds scipy's frozen object from library code adgen cannot read:
it was refused. Each call has a reference here returning an object of a small class holding
the parameters as attributes, whose methods are scipy's functions' references
(:mod:`adgen.rules.scipy_stats`) with those parameters: adgen compiles the object and its
methods as it compiles the user's classes, so the parameters get their gradients (``grad``,
``jvp``). Its values are scipy's; the methods these classes do not have (``rvs``, ``interval``,
a ``gamma``'s ``cdf``) raise an adgen error naming the method and what to write instead.
A frozen object made outside the function (a global ``PRIOR = norm(0, 1)``) is scipy's own
and stays refused. Second derivatives of a function building one are refused, as for any
object built inside (write ``norm.logpdf(x, mu, s)``).

Imported by :mod:`adgen.rules.scipy_stats` (registered when the user's code has imported
``scipy.stats``).
"""

from __future__ import annotations

from typing import Any

from scipy import stats

from adgen.rules import scipy_stats as sst
from adgen.rules.registry import defreference, defreference_class

# what scipy's frozen objects have (rv_continuous_frozen, multivariate_normal_frozen): read on
# one of these objects, refused by name; any other name is an AttributeError, as Python's (a
# hasattr(x, "tocsr") of adgen's own must see False). The parameters are held under names
# scipy's objects do not have (a frozen gamma's .a is its support's end, not its shape)
_SCIPYS = frozenset((
    "a", "args", "b", "cdf", "dist", "entropy", "expect", "interval", "isf", "kwds", "logcdf",
    "logpdf", "logsf", "mean", "median", "moment", "pdf", "ppf", "random_state", "rvs", "sf",
    "stats", "std", "support", "var", "abseps", "allow_singular", "cov", "cov_object", "dim",
    "marginal", "maxpts", "releps"))


def _missing(dist: str, method: str, rewrite: str) -> None:
    if method not in _SCIPYS:
        raise AttributeError(f"a frozen scipy.stats.{dist} has no attribute {method!r}")
    from adgen.rules.helpers_core import unsupported

    unsupported(f"{method} of a frozen scipy.stats.{dist}(...) made in a differentiated "
                f"function is not differentiated by adgen: {rewrite}")


@defreference_class
class FrozenNorm:
    """``scipy.stats.norm(loc, scale)``."""

    def __init__(self, loc: Any, scale: Any) -> None:
        self.at = loc
        self.width = scale

    def pdf(self, x: Any) -> Any:
        return sst.norm_pdf(x, self.at, self.width)

    def logpdf(self, x: Any) -> Any:
        return sst.norm_logpdf(x, self.at, self.width)

    def cdf(self, x: Any) -> Any:
        return sst.norm_cdf(x, self.at, self.width)

    def logcdf(self, x: Any) -> Any:
        return sst.norm_logcdf(x, self.at, self.width)

    def sf(self, x: Any) -> Any:
        return sst.norm_sf(x, self.at, self.width)

    def logsf(self, x: Any) -> Any:
        return sst.norm_logsf(x, self.at, self.width)

    def ppf(self, q: Any) -> Any:
        return sst.norm_ppf(q, self.at, self.width)

    def isf(self, q: Any) -> Any:
        return sst.norm_isf(q, self.at, self.width)

    def __getattr__(self, name: str) -> Any:
        _missing("norm", name, "write it with scipy.stats.norm's functions and NumPy")


@defreference_class
class FrozenGamma:
    """``scipy.stats.gamma(a, loc, scale)``."""

    def __init__(self, a: Any, loc: Any, scale: Any) -> None:
        self.shape_a = a
        self.at = loc
        self.width = scale

    def pdf(self, x: Any) -> Any:
        return sst.gamma_pdf(x, self.shape_a, self.at, self.width)

    def logpdf(self, x: Any) -> Any:
        return sst.gamma_logpdf(x, self.shape_a, self.at, self.width)

    def __getattr__(self, name: str) -> Any:
        _missing("gamma", name, "only logpdf and pdf are (the incomplete gamma function has "
                 "no derivative in its shape in adgen)")


@defreference_class
class FrozenBeta:
    """``scipy.stats.beta(a, b, loc, scale)``."""

    def __init__(self, a: Any, b: Any, loc: Any, scale: Any) -> None:
        self.shape_a = a
        self.shape_b = b
        self.at = loc
        self.width = scale

    def pdf(self, x: Any) -> Any:
        return sst.beta_pdf(x, self.shape_a, self.shape_b, self.at, self.width)

    def logpdf(self, x: Any) -> Any:
        return sst.beta_logpdf(x, self.shape_a, self.shape_b, self.at, self.width)

    def __getattr__(self, name: str) -> Any:
        _missing("beta", name, "only logpdf and pdf are (the incomplete beta function has no "
                 "derivative in its shapes in adgen)")


@defreference_class
class FrozenT:
    """``scipy.stats.t(df, loc, scale)``."""

    def __init__(self, df: Any, loc: Any, scale: Any) -> None:
        self.dof = df
        self.at = loc
        self.width = scale

    def pdf(self, x: Any) -> Any:
        return sst.t_pdf(x, self.dof, self.at, self.width)

    def logpdf(self, x: Any) -> Any:
        return sst.t_logpdf(x, self.dof, self.at, self.width)

    def __getattr__(self, name: str) -> Any:
        _missing("t", name, "only logpdf and pdf are (the incomplete beta function has no "
                 "derivative in its shapes in adgen)")


@defreference_class
class FrozenMultivariateNormal:
    """``scipy.stats.multivariate_normal(mean, cov)``."""

    def __init__(self, mean: Any, cov: Any, allow_singular: Any) -> None:
        self.center = mean
        self.covariance = cov
        self.singular = allow_singular

    def pdf(self, x: Any) -> Any:
        return sst.multivariate_normal_pdf(x, self.center, self.covariance, self.singular)

    def logpdf(self, x: Any) -> Any:
        return sst.multivariate_normal_logpdf(x, self.center, self.covariance, self.singular)

    def __getattr__(self, name: str) -> Any:
        _missing("multivariate_normal", name, "only logpdf and pdf are")


@defreference(stats.norm, name="scipy.stats.norm")
def norm(loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return FrozenNorm(loc, scale)


@defreference(stats.gamma, name="scipy.stats.gamma")
def gamma(a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return FrozenGamma(a, loc, scale)


@defreference(stats.beta, name="scipy.stats.beta")
def beta(a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return FrozenBeta(a, b, loc, scale)


@defreference(stats.t, name="scipy.stats.t")
def t(df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return FrozenT(df, loc, scale)


@defreference(stats.multivariate_normal, name="scipy.stats.multivariate_normal")
def multivariate_normal(mean: Any = None, cov: Any = 1, allow_singular: bool = False,
                        seed: Any = None) -> Any:
    return FrozenMultivariateNormal(mean, cov, allow_singular)
