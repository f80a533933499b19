"""Masks combined with ``&`` and ``^`` in a helper given a list of masks, as a piecewise
function is written by hand:

    def outside(x, conds):
        rest = np.ones(np.shape(x), dtype=bool)
        for c in conds:
            rest = rest & ~c

was refused under grad, jvp and hessian ('the operator & on values with a gradient is not
supported'): the helper's list parameter counts as having a gradient, so its masks did. A
bool mask, an int or a set has no derivative: ``&`` and ``^`` are now read through NumPy's
bitwise_and / bitwise_xor rules (no gradient). ``d | e`` (a dict merge) stays refused.
Values against central differences; grad under both policies.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X = np.array([0.3, -0.2, 0.5, 1.7, -1.1])
POLICIES = ["save", "strict"]


def outside(x, conds):
    rest = np.ones(np.shape(x), dtype=bool)
    for c in conds:
        rest = rest & ~c
    return rest


def by_pieces(x):
    neg, big = x < 0, x > 1
    rest = outside(x, [neg, big])
    return np.sum(np.where(neg, x ** 2, 0.0) + np.where(big, np.sin(x), 0.0) +
                  np.where(rest, x ** 3, 0.0))


def exclusive(x, masks):
    either = masks[0] ^ masks[1]
    return np.sum(np.where(either, np.exp(x), x ** 2))


def with_exclusive(x):
    return exclusive(x, [x > 0, x < 1])


CASES = [by_pieces, with_exclusive]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradient(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-8)


def test_gradient_by_hand():
    # x < 0: 2x; x > 1: cos x; else 3x^2
    expected = np.where(X < 0, 2 * X, np.where(X > 1, np.cos(X), 3 * X ** 2))
    np.testing.assert_allclose(adgen.grad(by_pieces)(X), expected, rtol=1e-12)


@pytest.mark.parametrize("f", CASES)
def test_jvp_and_hessian(f):
    v = np.array([0.5, -1.0, 0.25, 2.0, 1.0])
    np.testing.assert_allclose(adgen.jvp(f, (X,), (v,))[1], numerical_grad(f, (X,), 0) @ v,
                               rtol=1e-6, atol=1e-8)
    h = 1e-4
    expected = np.stack([(numerical_grad(f, (X + h * e,), 0) -
                          numerical_grad(f, (X - h * e,), 0)) / (2 * h) for e in np.eye(5)])
    np.testing.assert_allclose(adgen.hessian(f)(X), expected, rtol=1e-4, atol=1e-5)


def test_dict_merge_stays_refused():
    def merged(x):
        d = {"a": x} | {"b": 2 * x}
        return np.sum(d["a"] * d["b"])

    with pytest.raises(adgen.AdgenError):
        adgen.grad(merged)(X)
