"""Second derivatives through np.linalg.eigvals and np.trim_zeros are refused (their tangents
have no rule of their own); the error named only adgen's helper ("eigvals_jvp() has no
derivative rule"), which the user never called. It now says which NumPy function and what
to write instead, at the user's line; the first derivatives stay right."""

import numpy as np
import pytest

import adgen
from adgen.errors import MissingRuleError
from tests.gradcheck import central

M = np.array([[1.3, 0.2, -0.4], [0.5, 2.2, 0.1], [-0.3, 0.6, 1.9]])
X = np.array([0.3, 1.2, 0.5])


def spectrum(a):
    return np.sum(np.real(np.linalg.eigvals(a @ a.T)))


def trimmed(x):
    return np.sum(np.trim_zeros(np.concatenate([[0.0], x, [0.0]])) ** 3)


@pytest.mark.parametrize("f, x, name, instead", [(spectrum, M, "np.linalg.eigvals", "eigvalsh"),
                                                 (trimmed, X, "np.trim_zeros", "x[i:j]")])
def test_refused_naming_the_function_and_the_line(f, x, name, instead):
    with pytest.raises(MissingRuleError) as info:
        adgen.hessian(f)(x.copy())
    err = info.value
    assert name in err.message and "second derivatives" in err.message
    assert instead in err.hint
    assert err.location.file == __file__
    np.testing.assert_allclose(adgen.grad(f)(x.copy()), central(f, x), rtol=1e-6, atol=1e-8)
