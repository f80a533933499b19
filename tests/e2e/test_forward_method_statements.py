"""Forward mode through a method called as a statement for what it does to its object
(``self.accumulate(x)`` adding into ``self.total``, ``self.features(x)`` setting
``self.h``), and through a global partial called as a statement.

The jvp code ran such a call twice: once as it is, then again through ``call_jvp`` (which
computes the value and the tangent), and the marker meant to drop the plain call dropped the
statement after it instead. A method that adds into its object added twice (a silently wrong
value and tangent: 5.19 and -0.180 for 1.30 and -0.090), and a statement after the call was
lost (NameError for the name it binds). Checked against central differences.
"""

import functools

import numpy as np
from gradcheck import numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -0.2])
W = np.array([[0.5, -0.3, 0.2], [0.1, 0.8, -0.4]])


class Accumulator:
    def __init__(self):
        self.total = np.zeros(3)
        self.runs = 0

    def accumulate(self, x):
        self.runs += 1
        self.total = self.total + np.sin(x)

    def loss(self, x):
        self.accumulate(x)
        return np.sum(self.total ** 2)


class Features:
    def __init__(self, W):
        self.W = W

    def features(self, x):
        self.h = np.tanh(self.W @ x)

    def loss(self, x):
        self.features(x)
        scale = 2.0
        return scale * np.sum(self.h ** 2)


def directional(f, x, v):
    return numerical_grad(f, (x,), 0) @ v


def test_a_method_adding_into_its_object_runs_once():
    acc = Accumulator()
    value, slope = adgen.jvp(acc.loss, (X,), (V,))
    assert acc.runs == 1  # as a plain call of acc.loss
    np.testing.assert_allclose(value, Accumulator().loss(X), rtol=1e-12)
    np.testing.assert_allclose(slope, directional(lambda x: Accumulator().loss(x), X, V),
                               rtol=1e-6)


def test_the_statement_after_the_call_is_kept():
    m = Features(W)
    value, slope = adgen.jvp(m.loss, (X,), (V,))
    np.testing.assert_allclose(value, Features(W).loss(X), rtol=1e-12)
    np.testing.assert_allclose(slope, directional(lambda x: Features(W).loss(x), X, V),
                               rtol=1e-6)


def tally(counts, x):
    counts.append(1)
    return x


TALLY = functools.partial(tally, [])


def through_a_partial(x):
    TALLY(x)
    y = np.sin(x)
    return np.sum(y * x)


def test_a_global_partial_called_as_a_statement():
    TALLY.args[0].clear()
    value, slope = adgen.jvp(through_a_partial, (X,), (V,))
    assert len(TALLY.args[0]) == 1
    np.testing.assert_allclose(value, through_a_partial(X), rtol=1e-12)
    np.testing.assert_allclose(slope, directional(through_a_partial, X, V), rtol=1e-6)
