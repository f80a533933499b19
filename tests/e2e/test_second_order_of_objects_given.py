"""Second derivatives and forward mode of a function given an object of the user's class
whose method writes an array argument in place (``loss(model, u)`` doing ``model.step(u)``).

grad compiles such a function for the class of its object argument (507cf27,
transforms/object_classes.py), so the call of ``model.step`` is followed; the jvp code was
compiled without it, and ``adgen.hessian(loss, argnums=1)(model, u)`` (hvp, jacfwd and
jacrev of grad) was refused at ``model.step(u)`` ("writes an array argument ... called
through a variable"). The jvp code is now compiled for the arguments' classes too
(directional.tangent_compiled), and reverse mode over it takes the object and its tangent
for objects. Hessians against central differences of adgen.grad, under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


class Heat:
    """A simulation: ``step`` writes the field in place."""

    def __init__(self, dt, k):
        self.dt = dt
        self.k = k

    def step(self, u):
        lap = np.zeros_like(u)
        lap[1:-1] = u[:-2] - 2 * u[1:-1] + u[2:]
        u += self.dt * self.k * lap


class DampedHeat(Heat):
    """A subclass with its own step: its Hessian is its own, not the parent's."""

    def step(self, u):
        super().step(u)
        u *= 0.9


class Layer:
    """A model with its parameters in attributes; ``apply`` overwrites its input."""

    def __init__(self, W, b):
        self.W = W
        self.b = b

    def apply(self, x):
        x[:] = np.tanh(self.W @ x + self.b)


def loss(model, u):
    model.step(u)
    model.step(u)
    return np.sum(u ** 3)


def layer_loss(layer, x, target):
    layer.apply(x)
    layer.apply(x)
    return np.sum((x - target) ** 2)


U0 = np.array([0.3, 1.0, -0.5, 0.7, 0.2])
V = np.array([1.0, -2.0, 0.5, 0.3, 0.1])
RNG = np.random.default_rng(3)
LAYER = Layer(RNG.normal(size=(4, 4)) * 0.5, RNG.normal(size=4) * 0.1)
X0 = RNG.normal(size=4)
TARGET = RNG.normal(size=4)


def _hessian_of_gradient(f, args, n):
    """Central differences of adgen.grad (save), column by column."""
    g = adgen.grad(f, argnums=n)

    def column(k):
        def gk(x):
            a = list(args)
            a[n] = x.copy()
            return g(*a)[k]
        return numerical_grad(gk, (args[n].copy(),), 0)

    return np.array([column(k) for k in range(args[n].size)])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("model", [Heat(0.1, 1.0), DampedHeat(0.1, 1.0)],
                         ids=["Heat", "DampedHeat"])
def test_hessian_of_a_function_stepping_an_object_it_is_given(model, mutation):
    expected = _hessian_of_gradient(loss, (model, U0), 1)
    u = U0.copy()
    h = adgen.hessian(loss, argnums=1, mutation=mutation)(model, u)
    np.testing.assert_allclose(h, expected, rtol=1e-6, atol=1e-6)
    plain = U0.copy()
    loss(model, plain)
    np.testing.assert_allclose(u, plain)  # the argument ends as one plain call leaves it
    np.testing.assert_allclose(
        adgen.hvp(loss, argnums=1, mutation=mutation)(model, U0.copy(), V), expected @ V,
        rtol=1e-6, atol=1e-6)
    g = adgen.grad(loss, argnums=1, mutation=mutation)
    np.testing.assert_allclose(adgen.jacfwd(g, argnums=1)(model, U0.copy()), expected,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(adgen.jacrev(g, argnums=1)(model, U0.copy()), expected,
                               rtol=1e-6, atol=1e-6)


def test_two_classes_one_after_the_other():
    # one jvp copy per class: the subclass's step is not the parent's
    h1 = adgen.hessian(loss, argnums=1)(Heat(0.1, 1.0), U0.copy())
    h2 = adgen.hessian(loss, argnums=1)(DampedHeat(0.1, 1.0), U0.copy())
    np.testing.assert_allclose(h2, _hessian_of_gradient(loss, (DampedHeat(0.1, 1.0), U0), 1),
                               rtol=1e-6, atol=1e-6)
    assert not np.allclose(h1, h2)


def test_hessian_of_a_model_with_parameters_in_attributes():
    args = (LAYER, X0, TARGET)
    h = adgen.hessian(layer_loss, argnums=1)(LAYER, X0.copy(), TARGET)
    np.testing.assert_allclose(h, _hessian_of_gradient(layer_loss, args, 1),
                               rtol=1e-6, atol=1e-6)


def test_strict_refuses_the_hessian_where_it_refuses_the_gradient():
    # apply's gradient reads x (tanh of W @ x) that its own line overwrites: refused at the
    # user's line by grad and by hessian alike
    for derivative in (adgen.grad, adgen.hessian):
        with pytest.raises(adgen.MutationError) as err:
            derivative(layer_loss, argnums=1, mutation="strict")(LAYER, X0.copy(), TARGET)
        assert err.value.location.file == __file__
        assert "x[:] = np.tanh(self.W @ x + self.b)" in err.value.location.source_line


def test_jvp_of_a_function_given_the_object():
    _, tangent = adgen.jvp(loss, (Heat(0.1, 1.0), U0.copy()), (None, V))
    expected = numerical_grad(lambda u: loss(Heat(0.1, 1.0), u.copy()), (U0.copy(),), 0) @ V
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-6)


class Config:
    """A configuration object without methods, handed to a helper that writes u."""

    def __init__(self, k):
        self.k = k


def advance(cfg, u):
    u *= cfg.k
    u[1:] += np.sin(u[:-1])


def config_loss(cfg, u):
    advance(cfg, u)
    return np.sum(u ** 3)


def test_hessian_of_a_helper_given_a_config_object_and_writing_u():
    # cfg's class has no method the function calls: the jvp code was compiled for any
    # argument, and reverse mode over it took cfg for an array u may share ('an object of
    # class Config that may share an array ... took it for an array', at advance(cfg, u))
    cfg = Config(1.3)
    h = adgen.hessian(config_loss, argnums=1)(cfg, U0.copy())
    np.testing.assert_allclose(h, _hessian_of_gradient(config_loss, (cfg, U0), 1),
                               rtol=1e-6, atol=1e-6)
    # strict refuses it as it refuses the gradient (u *= cfg.k: its gradient reads u)
    for derivative in (adgen.grad, adgen.hessian):
        with pytest.raises(adgen.MutationError) as err:
            derivative(config_loss, argnums=1, mutation="strict")(cfg, U0.copy())
        assert "u *= cfg.k" in err.value.location.source_line
