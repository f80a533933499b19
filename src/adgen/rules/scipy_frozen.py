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
A frozen object made outside the function (a global ``PRIOR = norm(0, 1)``, or one passed
in) is scipy's own: a call of its method (``PRIOR.logpdf(x)``) is compiled as
``norm(*parameters of PRIOR).logpdf(x)`` (``registry.defmethod_reference`` of
scipy's ``rv_continuous_frozen.logpdf`` and the others), which builds the object above from
the parameters the frozen one holds, so they get their gradients too where they have any;
the compiled code is guarded by the global's binding (another distribution bound to it
compiles again). Second derivatives of a function building one are followed as for any
object built inside (``adgen.built_inside``).

Imported by :mod:`adgen.rules.scipy_stats` (registered when the user's code has imported
``scipy.stats``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats
from scipy.stats._distn_infrastructure import rv_continuous_frozen, rv_frozen
from scipy.stats._multivariate import multivariate_normal_frozen

from adgen.rules import scipy_stats as sst
from adgen.rules.registry import (
    defmethod_reference,
    defnondiff,
    defreference,
    defreference_class,
    defreference_helper,
)

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

    unsupported(f"{method} of a frozen scipy.stats.{dist}(...) is not differentiated by "
                f"adgen: {rewrite}")


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


# --------------------------------------------------------------------------------------------
# A frozen distribution scipy made (outside the function): its methods as the object above's

# (the defaults as ints: a helper without a derivative returns no float)
_FAMILIES = ((stats.norm, ("loc", "scale"), (0, 1)),
             (stats.gamma, ("a", "loc", "scale"), (None, 0, 1)),
             (stats.beta, ("a", "b", "loc", "scale"), (None, None, 0, 1)),
             (stats.t, ("df", "loc", "scale"), (None, 0, 1)))


@defnondiff
def family_of(frozen: Any, method: str) -> Any:
    """``(reference, names, defaults)`` of the distribution ``frozen`` (scipy's frozen
    object) was made from: :func:`norm` for ``scipy.stats.norm`` (called with the frozen
    object's parameters, it makes the object above), its parameters' names and defaults; or an
    adgen error naming the distribution where this module has no reference for it."""
    dist = frozen.dist  # (a copy scipy made of scipy.stats.norm: found by its class)
    references = {id(stats.norm): norm, id(stats.gamma): gamma, id(stats.beta): beta,
                  id(stats.t): t}
    for family, names, defaults in _FAMILIES:
        if type(dist) is type(family):
            return references[id(family)], names, defaults
    from adgen.rules.helpers_core import unsupported

    name = getattr(dist, "name", type(dist).__name__)
    unsupported(f"{method} of a frozen scipy.stats.{name}(...) is not differentiated by "
                f"adgen (frozen norm, gamma, beta and t are): write its {method} with NumPy, "
                "or register a rule for a function of yours with adgen.rrule")


@defreference_helper
def remade(frozen: Any, method: str) -> Any:
    """The object above for scipy's frozen ``frozen``, from the parameters it holds, given
    by position or by keyword (read one by one: forward mode passes no ``**kwds`` whose
    values have tangents)."""
    build, names, defaults = family_of(frozen, method)
    given = frozen.args
    kwds = frozen.kwds
    if len(kwds) == 0:  # norm(0.5, 2.0): as given (second derivatives through it too)
        return build(*given)
    return build(*by_position(given, kwds, names, defaults))


@defreference_helper
def by_position(given: Any, kwds: Any, names: Any, defaults: Any) -> Any:
    """The parameters of a frozen distribution made with keywords, by position."""
    return [given[k] if k < len(given) else
            (kwds[names[k]] if names[k] in kwds else defaults[k]) for k in range(len(names))]


@defmethod_reference(rv_continuous_frozen.logpdf, name="scipy.stats frozen logpdf")
def frozen_logpdf(self: Any, x: Any) -> Any:
    return remade(self, "logpdf").logpdf(x)


@defmethod_reference(rv_continuous_frozen.pdf, name="scipy.stats frozen pdf")
def frozen_pdf(self: Any, x: Any) -> Any:
    return remade(self, "pdf").pdf(x)


@defmethod_reference(rv_frozen.cdf, name="scipy.stats frozen cdf")
def frozen_cdf(self: Any, x: Any) -> Any:
    return remade(self, "cdf").cdf(x)


@defmethod_reference(rv_frozen.logcdf, name="scipy.stats frozen logcdf")
def frozen_logcdf(self: Any, x: Any) -> Any:
    return remade(self, "logcdf").logcdf(x)


@defmethod_reference(rv_frozen.sf, name="scipy.stats frozen sf")
def frozen_sf(self: Any, x: Any) -> Any:
    return remade(self, "sf").sf(x)


@defmethod_reference(rv_frozen.logsf, name="scipy.stats frozen logsf")
def frozen_logsf(self: Any, x: Any) -> Any:
    return remade(self, "logsf").logsf(x)


@defmethod_reference(rv_frozen.ppf, name="scipy.stats frozen ppf")
def frozen_ppf(self: Any, q: Any) -> Any:
    return remade(self, "ppf").ppf(q)


@defmethod_reference(rv_frozen.isf, name="scipy.stats frozen isf")
def frozen_isf(self: Any, q: Any) -> Any:
    return remade(self, "isf").isf(q)


@defnondiff
def covariance_held(frozen: Any) -> None:
    """Refuses, naming it, a frozen multivariate normal whose covariance is not held as this
    scipy version holds it (``frozen.cov_object._covariance``, read by
    :func:`frozen_mvn_logpdf`: ``frozen.cov`` is a property, computed when it is read)."""
    if not isinstance(getattr(getattr(frozen, "cov_object", None), "_covariance", None),
                      np.ndarray):
        from adgen.rules.helpers_core import unsupported

        unsupported("a frozen scipy.stats.multivariate_normal(...) made outside the function "
                    "holds its covariance in a form adgen does not read here: write "
                    "multivariate_normal.logpdf(x, mean, cov)")


@defmethod_reference(multivariate_normal_frozen.logpdf,
                     name="scipy.stats frozen multivariate_normal logpdf")
def frozen_mvn_logpdf(self: Any, x: Any) -> Any:
    covariance_held(self)
    return multivariate_normal(self.mean, self.cov_object._covariance,
                               self.allow_singular).logpdf(x)


@defmethod_reference(multivariate_normal_frozen.pdf,
                     name="scipy.stats frozen multivariate_normal pdf")
def frozen_mvn_pdf(self: Any, x: Any) -> Any:
    covariance_held(self)
    return multivariate_normal(self.mean, self.cov_object._covariance,
                               self.allow_singular).pdf(x)
