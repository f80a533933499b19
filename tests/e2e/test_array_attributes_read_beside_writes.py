"""An array whose attributes the code reads (``y.flags.writeable``, ``y.mT``, ``y.device``,
``y.__class__``, ``y.data.nbytes``, ``y.__array_interface__``) and which it writes in place.

Found by the lead probing in-place idioms: reading any attribute of a name other than an
array's shape, size, dtype or a view attribute (``T``, ``real``, ``imag``, ``flat``) made the
compiler take the name for an object, whose adjoint is a value rather than kept in shadow
memory beside the array's buffer; the in-place writes' adjoints were then lost or counted
twice: ``ok = y.flags.writeable; y[1:] = y[:-1] * 2.0`` and ``z = y.mT; y[0] *= 2.0`` gave
gradients off by up to 7.8 under both policies, silently (jvp was right). Now a name known as
an array at the signature compiled for (``y = np.sin(x)``, ``v = y.ravel()``), or read with an
attribute only arrays have (``flags``, ``ctypes``, ``__array_interface__``), keeps its shadow.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
W = np.arange(1.0, 7.0)


def copy_if_read_only(x):
    y = np.sin(x)
    if not y.flags.writeable:
        y = y.copy()
    y[1:] = y[:-1] * 2.0
    return np.sum(y * W)


def contiguous_view_or_itself(x):
    y = np.sin(x)
    v = y.ravel()
    v[...] = v * 3.0 if v.ndim == 0 else v
    flat = v.reshape(-1) if v.flags.c_contiguous else v
    return np.sum(y * W) + np.sum(flat[:2])


def matrix_transpose_then_write(x):
    y = np.sin(x).reshape(2, 3)
    z = y.mT                      # a view of y (NumPy 2)
    y[0] *= 2.0
    return np.sum(z * W.reshape(3, 2))


def device_checked(x):
    y = np.sin(x)
    if y.device != "cpu":
        raise ValueError("expected a CPU array")
    y[2:] *= 3.0
    return np.sum(y * W)


def class_checked(x):
    y = np.sin(x)
    kind = y.__class__.__name__
    y[2:] *= 3.0 if kind == "ndarray" else 1.0
    return np.sum(y * W)


def bytes_counted(x):
    y = np.sin(x)
    n = y.data.nbytes + y.__array_interface__["shape"][0]
    y[2:] *= 3.0
    return np.sum(y * W) * (n / 54.0)


FUNCTIONS = [copy_if_read_only, contiguous_view_or_itself, matrix_transpose_then_write,
             device_checked, class_checked, bytes_counted]
x = np.linspace(0.2, 1.4, 6)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", FUNCTIONS)
def test_grad(f, mutation):
    value, g = adgen.value_and_grad(f, mutation=mutation)(x.copy())
    assert value == pytest.approx(f(x.copy()))
    np.testing.assert_allclose(g, numerical_grad(f, (x.copy(),), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_jvp(f):
    v = np.linspace(-1.0, 2.0, 6)
    _, t = adgen.jvp(f, (x.copy(),), (v,))
    assert t == pytest.approx(numerical_grad(f, (x.copy(),), 0) @ v, rel=1e-6)


def test_an_object_with_a_data_attribute_stays_an_object():
    # an object of the user's whose array attribute is named data, written through it
    class Holder:
        def __init__(self, data):
            self.data = data

    def f(x):
        h = Holder(np.sin(x))
        h.data[1:] *= 2.0
        return np.sum(h.data * W)

    np.testing.assert_allclose(adgen.grad(f)(x.copy()), numerical_grad(f, (x.copy(),), 0),
                               rtol=1e-6, atol=1e-8)
