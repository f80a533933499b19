"""The names adgen gives the values it rewrites (a comprehension's ``f`` becomes ``f1``) were
fresh only among the function's own names: in a module defining a function ``f1``, the
renamed loop variable was resolved as that global by the analyses, which compiled it as the
callee. A gradient of the loss then raised ``f1``'s error (an ``np.apply_along_axis`` it
could not differentiate, in a notebook or script where ``f1`` was tried first), and a loss that
had worked raised it too. Since session 21 the fresh names avoid the function's globals."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


def f1(x):
    # a function of the module adgen cannot differentiate (NumPy runs the function; was
    # np.apply_along_axis, differentiated since session 27)
    return np.sum(np.apply_over_axes(np.cumsum, x.reshape(2, 3), [1]))


def terms(x):
    fs = [np.sin, np.cos, lambda z: z ** 2]
    return sum(f(x[i]) for i, f in enumerate(fs))


def terms_in_a_loop(x):
    total = 0.0
    for f in [np.tanh, np.exp]:
        total = total + np.sum(f(x))
    return total + sum([g(x[0]) for g in (np.sin, np.cos)])


X = np.array([0.2, 0.4, 0.6])


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("f", [terms, terms_in_a_loop])
def test_gradient_after_a_global_named_like_a_fresh_name_failed(f, policy):
    with pytest.raises(adgen.MissingRuleError):
        adgen.grad(f1)(np.arange(1.0, 7.0))
    g = adgen.grad(f, mutation=policy)(X)
    np.testing.assert_allclose(g, numerical_grad(f, (X,), 0), rtol=1e-6, atol=1e-9)


def test_hand_formula():
    expected = np.array([np.cos(X[0]), -np.sin(X[1]), 2 * X[2]])
    np.testing.assert_allclose(adgen.grad(terms)(X), expected, rtol=1e-12)
