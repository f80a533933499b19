"""API edges found while building the docs: refusals that must be loud, structures that work."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def cube(x):
    return x ** 3


def test_grad_of_grad_is_reverse_over_forward_not_silently_wrong():
    # differentiating adgen's own wrapper used to differentiate the inner function again;
    # grad of grad now differentiates the jvp of cube (tests/test_higher_order.py)
    assert adgen.grad(adgen.grad(cube))(1.5) == pytest.approx(6.0 * 1.5, rel=1e-12)
    with pytest.raises(adgen.NonDifferentiableError, match="hessian"):
        adgen.grad(adgen.grad(cube))(np.array([1.0, 2.0]))
    with pytest.raises(adgen.UnsupportedError):
        adgen.vjp(adgen.value_and_grad(cube), 1.0)


_GRAD_CUBE = adgen.grad(cube)


def calls_a_gradient(x):
    return _GRAD_CUBE(x) * 2.0


def test_gradient_called_inside_a_differentiated_function():
    # refused by name until session 22; now the call's vjp, a second derivative
    # (tests/e2e/test_derivatives_called_inside.py): d/dx 2 * 3x^2 = 12x
    assert adgen.grad(calls_a_gradient)(1.5) == pytest.approx(18.0)


class Labelled:
    def __init__(self, w, name):
        self.w = w
        self.name = name  # a str attribute: no gradient, but the object still has one


def labelled_loss(m, x):
    return np.sum(np.tanh(m.w * x))


def test_object_with_a_string_attribute_is_differentiable():
    m, x = Labelled(np.array([0.5, -1.0]), "layer"), np.array([2.0, 3.0])
    g = adgen.grad(labelled_loss)(m, x)
    assert isinstance(g, Labelled) and g.name is None
    expected = numerical_grad(lambda w: labelled_loss(Labelled(w, "layer"), x), [m.w], 0)
    assert_grad_close(g.w, expected)


def test_container_without_floats_is_refused():
    with pytest.raises(adgen.NonDifferentiableError, match="no float"):
        adgen.grad(lambda_free_len)(["a", "b"])


def lambda_free_len(xs):
    return float(len(xs))


def uses_names_of_the_pullback(out, saved, sh):
    top = out * saved
    return np.sum(top * sh)


def test_user_names_never_clash_with_the_pullbacks_own():
    out, saved, sh = np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([3.0, 0.25])
    g = adgen.grad(uses_names_of_the_pullback, argnums=(0, 1, 2))(out, saved, sh)
    for k in range(3):
        assert_grad_close(g[k], numerical_grad(uses_names_of_the_pullback,
                                               [out, saved, sh], k))
