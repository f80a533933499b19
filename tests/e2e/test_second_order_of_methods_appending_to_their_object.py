"""Second derivatives through a method that appends to a list its object holds, called in a
loop over layers, the loss reading the list afterwards:

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.cache.append(h)
        return h

Problem found by H7: since ff0e226 (which lets reverse mode over jvp code follow methods
setting attributes of their object) the hessian was 0.19 off, silently: the appended item's
adjoint, read by the caller as ``net.cache[0]``, did not reach the method's pullback. It is
refused at the call again; grad and jvp stay right.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -0.7, 1.1])


class Net:
    def __init__(self, n):
        self.cache = []
        self.W = [np.eye(3) * (0.5 + i) for i in range(n)]
        self.n = n

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.cache.append(h)
        return h


def loss(x):
    net = Net(3)
    h = x
    for i in range(net.n):
        h = net.layer(i, h)
    return np.sum(h) + np.sum(net.cache[0] ** 2)


def test_hessian_is_refused_at_the_call():
    with pytest.raises(adgen.UnsupportedError, match="through Net.layer") as err:
        adgen.hessian(loss)(X)
    assert err.value.location.source_line.strip() == "h = net.layer(i, h)"


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradient_and_jvp(mutation):
    check_grad(loss, (X,), mutation=mutation)
    v = np.array([1.0, 0.5, -2.0])
    _, t = adgen.jvp(loss, (X,), (v,))
    g = adgen.grad(loss)(X)
    assert np.isclose(t, g @ v)
