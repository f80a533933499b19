"""``getattr(np, name)`` with a name computed when the code runs (a loop over the names of
activations, a name held by a layer) is a function of the module, without a derivative:
reverse mode read it so; forward mode (jvp, hessian) refused it, since session 28 it gives it
no tangent and compiles its calls when they run. ``getattr`` of a value with a computed name
stays refused."""

import math

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
V = np.cos(np.arange(4.0))
ACTIVATIONS = ("tanh", "exp")


def summed_over_names(x):
    out = 0.0
    for name in ["sin", "cos", "tanh"]:
        out = out + np.sum(getattr(np, name)(x))
    return out


def chained_from_a_global(x):
    h = x
    for a in ACTIVATIONS:
        f = getattr(np, a)
        h = f(h * 0.5)
    return np.sum(h) + getattr(math, "sin")(x[0])


class Layer:
    def __init__(self, w, act):
        self.w = w
        self.act = act

    def __call__(self, h):
        return getattr(np, self.act)(self.w * h)


def through_layers(x):
    layers = [Layer(0.5, "tanh"), Layer(1.5, "sin")]
    h = x
    for layer in layers:
        h = layer(h)
    return np.sum(h ** 2)


CASES = [summed_over_names, chained_from_a_global, through_layers]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # d/dx (sin + cos + tanh) summed: cos x - sin x + 1 - tanh^2 x
    _, t = adgen.jvp(summed_over_names, (X.copy(),), (V,))
    assert t == pytest.approx(np.sum((np.cos(X) - np.sin(X) + 1 - np.tanh(X) ** 2) * V))


class Named:
    def __init__(self, w):
        self.l0 = w


def attribute_by_a_computed_name(x):
    o = Named(x * 2.0)
    k = 0
    return np.sum(getattr(o, f"l{k}"))  # MARK value


def test_getattr_of_a_value_stays_refused():
    with pytest.raises(adgen.AdgenError) as info:
        adgen.jvp(attribute_by_a_computed_name, (X.copy(),), (V,))
    assert "getattr" in str(info.value)
