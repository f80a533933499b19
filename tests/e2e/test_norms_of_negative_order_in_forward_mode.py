"""``np.linalg.norm(A, -2)`` (and other negative orders written in the code) under jvp and
hessian: the tangent code kept the rule's ``ord is None`` test as ``-2 is None`` (a signed
number is not a gast.Constant, so the arm was not chosen), and compiling it printed Python's
SyntaxWarning '"is" with a literal' to the user. The arm is now chosen at compile time."""
import warnings

import numpy as np

import adgen
from tests.gradcheck import numerical_grad, numerical_jvp

A = np.array([[1.0, 0.3, -0.2], [0.4, 2.0, 0.1], [-0.5, 0.2, 1.5]])


def smallest_singular_value_and_more(A):
    return np.linalg.norm(A, -2) + np.linalg.norm(A[0], -1) + np.linalg.norm(A, -np.inf)


def test_jvp_compiles_without_a_syntax_warning_and_is_right():
    v = np.cos(np.arange(9.0)).reshape(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntaxWarning)
        _, t = adgen.jvp(smallest_singular_value_and_more, (A,), (v,))
    np.testing.assert_allclose(t, numerical_jvp(smallest_singular_value_and_more, (A,), (v,)),
                               rtol=1e-6)


def test_hessian_of_the_smallest_singular_value():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntaxWarning)
        H = adgen.hessian(lambda A: np.linalg.norm(A, -2))(A)
    def sigma_min(M):
        return np.linalg.norm(M, -2)

    eps = 1e-4  # second differences of NumPy's function (central differences of its
    # gradient by central differences)
    cols = [(numerical_grad(sigma_min, (A + eps * e.reshape(3, 3),), 0) -
             numerical_grad(sigma_min, (A - eps * e.reshape(3, 3),), 0)).ravel() / (2 * eps)
            for e in np.eye(9)]
    np.testing.assert_allclose(H.reshape(9, 9), np.stack(cols, axis=1), rtol=1e-4, atol=1e-5)
