"""An array a method of an object built in the function returns, then written in place.

``layer = Layer(W, b); h = layer(x); h[:, 0] *= scale`` was refused when the gradient ran ("an
object of class Layer that may share an array with one written in place ... adgen took it for
an array when compiling"): the object was not known for an object, so the write to ``h``,
which may share the object's memory, asked the object for an array's shadow. An object the
function builds from a class of the user's is now an object to the effects analysis, as a
parameter compiled for its class is (pipeline). Expected values: central differences; a
method returning the object's own array (``m.get()``) is followed too.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

W = np.array([[0.2, -0.1], [0.4, 0.3]])
B = np.array([0.05, -0.2])
X = np.array([[0.3, -0.2], [0.5, 0.9], [-1.0, 0.4]])


class Layer:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)

    def get(self):
        return self.w


def scaled_output(x, scale):
    layer = Layer(W, B)
    h = layer(x)
    h[:, 0] *= scale
    return np.sum(h ** 2)


def own_array_written(w):
    m = Layer(w, B)
    v = m.get()
    v *= 2.0  # writes w itself, as the plain call does
    return np.sum(v * w)


def test_a_method_result_written_in_place() -> None:
    gx, gs = adgen.grad(scaled_output, argnums=(0, 1))(X.copy(), 1.5)
    np.testing.assert_allclose(gx, numerical_grad(scaled_output, (X.copy(), 1.5), 0),
                               rtol=1e-6, atol=1e-8)
    assert gs == pytest.approx(numerical_grad(scaled_output, (X.copy(), 1.5), 1), rel=1e-6)


def test_strict_names_the_write_over_what_tanh_s_gradient_reads() -> None:
    with pytest.raises(adgen.MutationError, match=r"h\[:, 0\] \*= scale overwrites h"):
        adgen.grad(scaled_output, mutation="strict")(X.copy(), 1.5)


def test_the_object_s_own_array_returned_and_written() -> None:
    g = adgen.grad(own_array_written)(W.copy())
    np.testing.assert_allclose(g, numerical_grad(own_array_written, (W.copy(),), 0),
                               rtol=1e-6, atol=1e-8)
