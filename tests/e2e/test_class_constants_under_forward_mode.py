"""Constants a class holds in its body (``alpha = 0.5``, ``shift = np.array(...)``, a base
class's), read through ``self`` in forward mode.

The tangent of an object is an object of its class whose attributes are the tangents of the
object's own. A value held by the class, not the object, was not among them, so the tangent
code's ``self_dot.alpha`` read the class's value: the constant 0.5 got the derivative 0.5 (a
silently wrong jvp, jacfwd and hessian). It gets a zero now, wherever the tangent object comes
from: built for a method's receiver, given by the user, or made where the function builds an
object.
"""

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_jvp, numerical_grad


class Layer:
    alpha = 0.5                          # a constant of every layer
    shift = np.array([0.1, -0.2])        # an array held by the class

    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return np.tanh(x @ self.w) + self.shift

    def loss(self, x):
        return np.sum(self.forward(x) ** 2) * self.alpha


class Scaled(Layer):
    alpha = 3.0                          # the subclass's value hides the base's

    def forward(self, x):
        return super().forward(x) * 2.0


def loss_of_layer(w, x):
    return Scaled(w).loss(x)             # the object built inside the function


def penalised(x, layer):
    return np.sum(np.sin(x) * layer.w) * layer.alpha + np.sum(x[:2] * layer.shift)


RS = np.random.RandomState(7)
W = RS.randn(3, 2)
X = RS.randn(4, 3)
V = RS.randn(4, 3)


@pytest.mark.parametrize("cls", [Layer, Scaled])
def test_jvp_of_a_method_reading_a_class_constant(cls):
    layer = cls(W.copy())

    def loss(x):
        return layer.loss(x)

    check_jvp(loss, (X.copy(),), (V.copy(),))
    out, dot = adgen.jvp(loss, (X.copy(),), (V.copy(),))
    assert np.isclose(dot, np.sum(numerical_grad(loss, (X.copy(),), 0) * V), rtol=1e-5)


@pytest.mark.parametrize("cls", [Layer, Scaled])
def test_jacfwd_and_hessian_of_a_method_reading_a_class_constant(cls):
    layer = cls(W.copy())
    x = X[0].copy()

    def loss(x):
        return layer.loss(x)

    ref = numerical_grad(loss, (x,), 0)
    assert np.allclose(adgen.jacfwd(loss)(x), ref, rtol=1e-5, atol=1e-7)
    grad = adgen.grad(loss)
    href = np.stack([(grad(x + 1e-5 * e) - grad(x - 1e-5 * e)) / 2e-5 for e in np.eye(3)])
    assert np.allclose(adgen.hessian(loss)(x), href, rtol=1e-4, atol=1e-6)


def test_jvp_of_a_function_building_an_object_with_class_constants():
    check_jvp(loss_of_layer, (W.copy(), X.copy()), (RS.randn(3, 2), V.copy()))


def test_jvp_along_a_tangent_given_for_an_object():
    layer = Layer(np.array([1.0, 2.0, 3.0]))
    x = np.array([0.3, -0.1, 0.7])
    d = Layer(np.array([1.0, 0.0, -1.0]))  # the direction: its w only
    _, dot = adgen.jvp(penalised, (x, layer), (None, d))
    ref = (penalised(x, Layer(layer.w + 1e-6 * d.w)) -
           penalised(x, Layer(layer.w - 1e-6 * d.w))) / 2e-6
    assert np.isclose(dot, ref, rtol=1e-6)
    v = np.array([1.0, -1.0, 0.5])
    _, dot = adgen.jvp(penalised, (x, layer), (v, Layer(np.zeros(3))))
    assert np.isclose(dot, numerical_grad(penalised, (x, layer), 0) @ v, rtol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradients_of_the_same_programs(mutation):
    layer = Scaled(W.copy())
    g = adgen.grad(lambda x: layer.loss(x), mutation=mutation)(X.copy())
    assert np.allclose(g, numerical_grad(lambda x: layer.loss(x), (X.copy(),), 0), rtol=1e-5)
    g = adgen.grad(loss_of_layer, mutation=mutation)(W.copy(), X.copy())
    assert np.allclose(g, numerical_grad(loss_of_layer, (W.copy(), X.copy()), 0), rtol=1e-5)


def test_a_class_constant_changed_between_calls():
    layer = Layer(W.copy())

    def loss(x):
        return layer.loss(x)

    check_jvp(loss, (X.copy(),), (V.copy(),))
    Layer.alpha = 2.0
    try:
        check_jvp(loss, (X.copy(),), (V.copy(),))
    finally:
        Layer.alpha = 0.5


class Grid:
    spacing = 0.5

    def __init__(self, u):
        self.u = u

    def energy(self):
        return np.sum(np.diff(self.u) ** 2) / self.spacing + np.sum(self.u ** 2) * Grid.spacing


Grid.default = Grid(np.zeros(3))  # a class holding an instance of itself


def test_a_class_holding_an_instance_of_itself():
    def energy(u):
        return Grid(u).energy()

    u = np.array([0.2, -0.4, 0.9, 1.3])
    check_jvp(energy, (u.copy(),), (np.array([1.0, 0.5, -0.5, 2.0]),))


class Slotted:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w = w
        self.b = b

    def loss(self, x):
        return np.sum(np.tanh(x @ self.w) + self.b)


def loss_of_a_slotted_layer(w, x):
    return Slotted(w, 0.5).loss(x)


def test_a_class_with_slots_built_in_the_function():
    # (its tangent object has no __dict__ to put the class's constants in: object_with
    # raised AttributeError there)
    check_jvp(loss_of_a_slotted_layer, (W.copy(), X.copy()), (RS.randn(3, 2), V.copy()))


class SlottedWithAConstant:
    __slots__ = ("w",)
    alpha = 0.5

    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return np.tanh(x @ self.w)

    def loss(self, x):
        return np.sum(self.forward(x) ** 2) * self.alpha


SLOTTED = Slotted(W.copy(), 0.5)


def test_a_method_of_a_global_object_with_slots():
    # (its tangent was 0.0: the tangent code's self_dot.w raised AttributeError)
    check_jvp(lambda x: SLOTTED.loss(x), (X.copy(),), (V.copy(),))


@pytest.mark.parametrize("built", [False, True])
def test_a_class_with_slots_and_a_constant_is_refused_in_forward_mode(built):
    # its tangent object cannot shadow alpha: the class's 0.5 was read as the derivative of
    # a constant (built in the function: a silently wrong jvp), or it raised AttributeError
    layer = SlottedWithAConstant(W.copy())

    def loss(x):
        return SlottedWithAConstant(W).loss(x) if built else layer.loss(x)

    with pytest.raises(adgen.AdgenError, match="__slots__") as err:
        adgen.jvp(loss, (X.copy(),), (V.copy(),))
    assert err.value.location.file == __file__
    g = adgen.grad(loss)(X.copy())
    np.testing.assert_allclose(g, numerical_grad(loss, (X.copy(),), 0), rtol=1e-6)


class Spring:
    k = 3.0

    @classmethod
    def energy(cls, x):
        return 0.5 * cls.k * np.sum(x ** 2) + np.sum(np.sin(x))


def test_a_classmethod_given_to_forward_mode():
    # (the class's tangent was 0.0: the tangent code's cls_dot.k raised AttributeError)
    x = np.array([0.5, 1.5])
    check_jvp(Spring.energy, (x.copy(),), (np.array([1.0, -2.0]),))
    np.testing.assert_allclose(adgen.jacfwd(Spring.energy)(x.copy()),
                               numerical_grad(Spring.energy, (x.copy(),), 0), rtol=1e-6)
