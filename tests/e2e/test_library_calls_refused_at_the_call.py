"""A call of an installed library's function that adgen has no rule for and cannot
differentiate through its source (scipy.linalg.sqrtm, a scipy.stats distribution's method: the
normal, gamma, beta and t ones have references since sessions 21-23, Cauchy's has not) is
refused at the user's line, naming the function as the user called it and the package, with a
hint the user can act on (an adgen.rrule), not a hint about the library's own internals. A
method reached at run time (``scipy.stats.cauchy.logpdf``) was refused at a line inside scipy.
The user's own helpers keep their messages."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

scipy_linalg = pytest.importorskip("scipy.linalg")
scipy_stats = pytest.importorskip("scipy.stats")
multivariate_normal = scipy_stats.multivariate_normal  # as `from scipy.stats import ...` binds it


def matrix_square_root_loss(A):
    return scipy_linalg.sqrtm(A).sum()  # MARK sqrtm


def cauchy_log_likelihood(x):
    # (expm and Student's t have references since session 23: these two still have none)
    return scipy_stats.cauchy.logpdf(x, loc=0.5, scale=2.0).sum()  # MARK logpdf


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("f, arg, name, mark", [
    (matrix_square_root_loss, np.eye(2) * 0.3 + 0.1, "scipy.linalg.sqrtm", "# MARK sqrtm"),
    (cauchy_log_likelihood, np.array([0.1, 0.7]), "logpdf", "# MARK logpdf"),
])
def test_refused_at_the_users_line_naming_the_library(f, arg, name, mark):
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(f)(arg)
    err = info.value
    assert err.location is not None and err.location.file == __file__
    assert err.location.line == _line(mark)
    assert name in err.message and "(from the installed package scipy)" in err.message
    assert "@adgen.rrule(" in err.hint


def scale_all(x, c):  # a user's helper that adgen refuses (eval; **kwargs until session 19)
    return x * eval("c")  # noqa: S307


def calls_own_helper_through_a_variable(x):
    fn = scale_all
    return np.sum(fn(x, c=2.0))


def test_a_users_own_helper_is_not_called_a_library():
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(calls_own_helper_through_a_variable)(np.ones(2))
    assert "installed package" not in str(info.value)


def copies_in_fortran_order(A):
    B = np.copy(A, order="F")
    B[0] *= 3.0
    return np.sum(B ** 2) + np.copy(A, "C").sum()


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_np_copy_with_an_order(mutation):
    check_grad(copies_in_fortran_order, (np.arange(6.0).reshape(2, 3) + 1,), mutation=mutation)
    got = adgen.jvp(copies_in_fortran_order, (np.ones((2, 3)),), (np.ones((2, 3)),))[1]
    assert got == pytest.approx(2 * 9 * 3 + 2 * 3 + 6)


def gaussian_mixture_component(mu):
    # scipy's multivariate_normal.logcdf compiles, and refuses a call of its own (an eigh
    # behind a wrapper reading *args) only when it runs: that refusal was located at
    # scipy's line, not at this one (logpdf and pdf have references since session 22)
    cov = np.eye(2) * 0.5
    return multivariate_normal.logcdf(np.array([0.3, -0.2]), mu, cov)  # MARK mvn


def test_refused_inside_a_library_when_it_runs_at_the_users_line():
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(gaussian_mixture_component)(np.zeros(2))
    err = info.value
    assert err.location is not None and err.location.file == __file__
    assert err.location.line == _line("# MARK mvn")
    assert "(from the installed package scipy)" in err.message
    assert any("_multivariate.py" in where.file for where in err.inner)  # scipy's line too
    assert "norm.logpdf(x, mu, s)" in err.hint  # what adgen covers of scipy.stats
