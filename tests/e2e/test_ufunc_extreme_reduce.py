"""np.maximum.reduce and np.minimum.reduce (a hinge's worst case, a row's smallest margin), as
users write them, are differentiated as np.max / np.min along axis 0 unless told (since
session 24; they raised MissingRuleError). Central differences under both policies, jvp, a
hand formula with a tie."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp

import adgen

X = np.array([0.31, 0.92, 0.57, 1.43, 0.78, 1.12])


def worst_margin(x):
    m = np.reshape(x, (2, 3))
    return np.sum(np.maximum.reduce(m) ** 2) + np.sum(np.minimum.reduce(m, axis=1) * x[:2])


def overall(x):
    return np.maximum.reduce(np.sin(x), axis=None) - np.minimum.reduce(x ** 2, keepdims=True)[0]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [worst_margin, overall])
def test_central_differences_and_jvp(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 2.0, 0.25, 1.5, -0.75]),))


def test_a_tie_shares_the_gradient():
    def f(x):
        return np.maximum.reduce(x)

    assert_grad_close(adgen.grad(f)(np.array([1.0, 3.0, 3.0, 2.0])),
                      np.array([0.0, 0.5, 0.5, 0.0]))
