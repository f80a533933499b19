"""Forward over forward (``jacfwd(jacfwd(f))``, ``jacfwd(jacrev(f))``, ``jvp`` of
``jacfwd(f)``) of a function calling a function adgen finds when it runs: a method of an
object the function reads (``lambda z: model.loss(z)``), a function from a dict, one passed as
an argument, callable layers from a list, a ``functools.partial``, an object built inside whose
method sets an attribute the function reads after. The jvp code of such a call goes through
``runtime.call_jvp`` when it runs; forward mode refused to differentiate it again ("forward
mode over forward mode ... is not supported yet"). It is now the callee's jvp code
differentiated again when it runs (adgen.second_forward_calls). Checked against hand
formulas and second differences of ``f``; ``grad`` under both mutation policies too.

Third derivatives through such a call (``jacfwd(hessian(f))``, ``jvp`` of ``hvp``) are reverse
mode over that code (refused before, naming adgen's ``call_jvp_tangent`` and its rrule),
checked against central differences of the Hessian; through a method setting attributes of
its object they stay refused, in the user's words.
"""

import functools

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad, numerical_hessian

import adgen


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(self.w * x ** 3)


class Layer:
    def __init__(self, a):
        self.a = a

    def __call__(self, h):
        return np.tanh(self.a * h)


class Cell:
    """A method setting an attribute of its object, read by the caller after the call."""

    def __init__(self, a):
        self.a = a
        self.h = None

    def step(self, x):
        self.h = np.sin(self.a * x)
        return np.sum(self.h * x)


def scaled_cube(x, c):
    return c * x ** 3


MODEL = Model(np.array([1.0, 2.0, 3.0]))
LAYERS = [Layer(0.5), Layer(1.5)]
ACTS = {"f": lambda z: np.sin(z) * z ** 2}
X = np.array([0.3, -0.7, 1.1])


def through_the_model(z):
    return MODEL.loss(z) + np.sum(z ** 2)


def from_a_dict(z):
    g = ACTS["f"]
    return np.sum(g(z))


def apply(fn, z):
    return fn(z)


def passed_as_an_argument(z):
    return np.sum(apply(np.tanh, z) * apply(ACTS["f"], z))


def through_layers(z):
    h = z
    for layer in LAYERS:
        h = layer(h)
    return np.sum(h ** 2)


def through_a_partial(z):
    g = functools.partial(scaled_cube, c=2.0)
    return np.sum(g(z))


def object_built_inside_set_by_its_method(z):
    m = Cell(1.2)
    r = m.step(z)
    return r * np.sum(m.h ** 2)


def attribute_set_by_the_method_only(z):
    m = Cell(0.8)
    m.step(z)
    return np.sum(m.h ** 2)


FUNCTIONS = [through_the_model, from_a_dict, passed_as_an_argument, through_layers,
             through_a_partial, object_built_inside_set_by_its_method,
             attribute_set_by_the_method_only]
V = np.array([1.0, 0.5, -2.0])


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jacfwd_of_jacfwd_vs_second_differences(f):
    H = numerical_hessian(f, X)
    assert np.allclose(adgen.jacfwd(adgen.jacfwd(f))(X), H, rtol=1e-5, atol=1e-5)
    assert np.allclose(adgen.jvp(adgen.jacfwd(f), (X,), (V,))[1], H @ V, rtol=1e-5,
                       atol=1e-5)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_grad_both_policies(f):
    for mutation in ("save", "strict"):
        check_grad(f, (X,), mutation=mutation)


def test_by_hand():
    H = np.diag(6 * MODEL.w * X)
    assert np.allclose(adgen.jacfwd(adgen.jacfwd(lambda z: MODEL.loss(z)))(X), H)
    assert np.allclose(adgen.jacfwd(adgen.jacrev(lambda z: MODEL.loss(z)))(X), H)
    assert np.allclose(adgen.jacfwd(adgen.jacfwd(through_the_model))(X), H + 2 * np.eye(3))
    # sum(sin(0.8 x)^2): d2/dx_i^2 = 2 * 0.64 * cos(1.6 x_i)
    assert np.allclose(adgen.jacfwd(adgen.jacfwd(attribute_set_by_the_method_only))(X),
                       np.diag(1.28 * np.cos(1.6 * X)))


THIRD = [through_the_model, from_a_dict, through_layers, through_a_partial]


@pytest.mark.parametrize("f", THIRD, ids=lambda f: f.__name__)
def test_third_derivatives_vs_differences_of_the_hessian(f):
    # (refused before: 'third derivatives ... not supported yet', and before that the
    # message named adgen's call_jvp_tangent and its rrule)
    hessian = adgen.hessian(f)
    T = np.stack([(hessian(X + 1e-5 * e) - hessian(X - 1e-5 * e)) / 2e-5 for e in np.eye(3)],
                 axis=-1)
    assert np.allclose(adgen.jacfwd(adgen.hessian(f))(X), T, rtol=1e-5, atol=1e-5)
    U = np.array([0.5, -1.0, 2.0])
    _, t = adgen.jvp(adgen.hvp(f), (X, V), (U, np.zeros(3)))
    assert np.allclose(t, T @ U @ V, rtol=1e-5, atol=1e-5)


def test_third_derivative_by_hand():
    T = np.zeros((3, 3, 3))
    for i in range(3):
        T[i, i, i] = 6 * MODEL.w[i]
    assert np.allclose(adgen.jacfwd(adgen.hessian(lambda z: MODEL.loss(z)))(X), T)
    assert np.allclose(adgen.jacfwd(adgen.hessian(MODEL.loss))(X), T)


def test_third_derivatives_through_a_method_setting_attributes_refused():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.jacfwd(adgen.hessian(object_built_inside_set_by_its_method))(X)
    text = str(info.value)
    # (its second derivatives by reverse mode are refused too where the second-order call of
    # a method setting attributes is: "second derivatives ... through Cell.step")
    assert "derivatives" in text and ("Cell.step" in text or
                                      "adgen.jacfwd(adgen.hessian(m.loss))" in text)
    assert "call_jvp" not in text and "rrule" not in text
    assert __file__.split("/")[-1] in text


# a function calling adgen's forward-mode code itself (a jacfwd made at module level or
# inside) through a method found when it runs: its jvp is forward over forward (refused before)
JAC = adgen.jacfwd(lambda z: MODEL.loss(z) * z)


def calls_a_jacobian(z):
    return np.sum(JAC(z) ** 2)


def builds_a_jacobian(z):
    d = adgen.jacfwd(from_a_dict)
    return np.sum(d(z) * z)


@pytest.mark.parametrize("f", [calls_a_jacobian, builds_a_jacobian],
                         ids=lambda f: f.__name__)
def test_jvp_of_a_function_calling_jacfwd(f):
    g = numerical_grad(f, (X,), 0)
    assert np.allclose(adgen.jvp(f, (X,), (V,))[1], g @ V, rtol=1e-6, atol=1e-6)
    assert np.allclose(adgen.jacfwd(f)(X), g, rtol=1e-6, atol=1e-6)
    for mutation in ("save", "strict"):
        check_grad(f, (X,), mutation=mutation)
