"""``y.shape = (3, 1)`` of an array under forward mode.

Reverse mode refuses the store at its line (adgen cannot map the adjoint of a change of an
array's layout: write the elements, or rebind the name). Forward mode stored the tangent of
the shape there, ``y_dot.shape = (0.0, 0.0)``, and the user got Python's ``TypeError:
'float' object cannot be interpreted as an integer`` from generated code. It now refuses the
store at the user's line as reverse mode does. An object of the user's with an attribute of
that name (``self.shape = s``) is not an array: it runs, its tangent against central
differences.
"""

import numpy as np
import pytest
from gradcheck import check_jvp

import adgen
from adgen.errors import AdgenError

X = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, 0.5, -2.0])


def reshaped_in_place(x):
    y = x * 2.0
    y.shape = (3, 1)
    return np.sum(y ** 2 * np.arange(1.0, 4.0)[:, None])


def retyped_in_place(x):
    y = np.sin(x)
    y.dtype = np.float64
    return np.sum(y)


class Grid:
    def __init__(self, values):
        self.values = values
        self.shape = values.shape  # an attribute of the user's named shape


def through_an_object_with_a_shape(x):
    g = Grid(x * 3.0)
    g.shape = (len(x),)
    return np.sum(g.values ** 2) * g.shape[0]


@pytest.mark.parametrize("f", [reshaped_in_place, retyped_in_place])
def test_an_array_attribute_store_is_refused_at_the_line_in_forward_mode(f):
    with pytest.raises(AdgenError) as err:
        adgen.jvp(f, (X.copy(),), (T,))
    text = str(err.value)
    assert "storing the attribute ." in text and "of an array" in text
    assert "test_array_attribute_stores_under_jvp.py" in text and " = " in text
    assert "y[...] = v" in text  # what to do instead


@pytest.mark.parametrize("f", [reshaped_in_place, retyped_in_place])
def test_as_reverse_mode_refuses_it(f):
    with pytest.raises(AdgenError, match="storing the attribute"):
        adgen.grad(f)(X.copy())


def test_an_object_s_own_shape_attribute_runs():
    check_jvp(through_an_object_with_a_shape, (X.copy(),), (T,))
