"""np.r_ reached by another name than its own (a parameter default, a dict item, a helper's
parameter, a lambda's closure) and indexed by values that carry a derivative: the compiler
cannot see it is np.r_, and read the index as one without a derivative. grad gave -0.5 for
-1.0 (default, dict item), a raw TypeError through a helper, and jvp 0.0 for -0.26 through a
lambda, silently. Now refused at the line, in grad (both policies) and jvp; np.r_ written
out where it indexes is differentiated (checked against central differences).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError
from tests.gradcheck import check_grad, check_jvp

TRICKS = {"cat": np.r_}


def through_a_default(z, c=np.r_):
    r = c[z, 2.0 * z]
    return np.sum(r[1] * z[1])


def through_a_dict_item(z):
    c = TRICKS["cat"]
    r = c[z, 2.0 * z]
    return np.sum(r[1] * z[1])


def helper(c, z):
    return c[z, 2.0 * z]


def through_a_helper(z):
    r = helper(np.r_, z)
    return np.sum(r[1] * z[1])


def through_a_lambda(z):
    c = np.r_
    pad = lambda a: c[a, 1.0]  # noqa: E731
    return np.sum(pad(z) ** 2 * np.arange(4.0))


def written_out(z):
    r = np.r_[z, 2.0 * z]
    return np.sum(r[1] * z[1]) + np.sum(np.r_[z, 1.0] ** 2)


Z = np.array([0.3, -0.5, 0.9])
REFUSED = [through_a_default, through_a_dict_item, through_a_helper]


@pytest.mark.parametrize("f", REFUSED)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_is_refused_at_the_index(f, mutation):
    with pytest.raises(AdgenError, match="an index that carries a derivative"):
        adgen.grad(f, mutation=mutation)(Z.copy())


@pytest.mark.parametrize("f", [*REFUSED, through_a_lambda])
def test_jvp_is_refused_at_the_index(f):
    with pytest.raises(AdgenError, match="an index that carries a derivative"):
        adgen.jvp(f, (Z.copy(),), (np.array([1.0, -0.5, 0.25]),))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_written_out_is_differentiated(mutation):
    check_grad(written_out, [Z.copy()], mutation=mutation)
    check_jvp(written_out, [Z.copy()], [np.array([1.0, -0.5, 0.25])])
