"""Second derivatives (hessian, hvp, jacrev / jacfwd of grad) of a function that builds an
object of the user's class inside: a dataclass of parameters (``Params(theta[:3],
theta[3])``), a class whose ``__init__`` sets attributes from its arguments (nonlinearly:
``self.s = np.exp(log_s)``), a model built inside whose parameters are set afterwards (``m
= MLP(sizes); m.W, m.b = W, b``, from another module), and methods called on the object
(one writing its argument in place, ``sim.step(u)``).

They were refused ("second derivatives ... of a function that builds an object of your class
inside it (sim = Heat(dt), which jvp follows)", or "... of code that sets an attribute of an
object it is given" for the model). The jvp code now builds the object and its tangent in
one call (``n, n_dot = construct_jvp(Params, ...)``, adgen.built_inside), which reverse mode
differentiates by its rule. Checked against second central differences of the function
(numerical_hessian) and, where installed, jax.hessian of the same computation on
jax.numpy; under both mutation policies where the code mutates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import adgen
from tests.e2e.built_inside_models import MLP
from tests.e2e.built_inside_models import loss as mlp_loss
from tests.gradcheck import numerical_hessian

POLICIES = ["save", "strict"]


@dataclass
class Params:
    w: np.ndarray
    b: float = 0.0


def predict(p: Params, x):
    return 1 / (1 + np.exp(-(x @ p.w + p.b)))


def nll(p, x, y):
    q = predict(p, x)
    return -np.mean(y * np.log(q) + (1 - y) * np.log1p(-q))


RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 3))
Y = (X[:, 0] > 0).astype(float)
THETA = np.array([0.3, -0.2, 0.1, 0.05])


def flat(theta):
    return nll(Params(theta[:3], theta[3]), X, Y)


def flat_by_keyword(theta):
    return nll(Params(w=theta[:3], b=theta[3]), X, Y)


class Gaussian:
    """Its __init__ sets an attribute as a nonlinear function of its argument."""

    def __init__(self, mu, log_s):
        self.mu = mu
        self.s = np.exp(log_s)

    def nll(self, x):
        z = (x - self.mu) / self.s
        return np.sum(0.5 * z ** 2 + np.log(self.s))


XS = np.array([0.3, -1.2, 0.8, 2.0])


def gaussian_nll(theta):
    g = Gaussian(theta[0], theta[1])
    return g.nll(XS)


class Heat:
    def __init__(self, dt, k=1.0):
        self.dt = dt
        self.k = k
        self.steps = 0

    def step(self, u):
        lap = np.zeros_like(u)
        lap[1:-1] = u[:-2] - 2 * u[1:-1] + u[2:]
        u += self.dt * self.k * lap
        self.steps += 1


class Damped(Heat):
    def __init__(self, dt, damping):
        super().__init__(dt, k=2.0)
        self.damping = np.exp(-damping)

    def step(self, u):
        super().step(u)
        u *= self.damping


def simulate(u, dt):
    sim = Heat(dt)
    sim.step(u)
    sim.step(u)
    return np.sum(u ** 3)


def damped(u, dt, c):
    sim = Damped(dt, c)
    for _ in range(3):
        sim.step(u)
    return np.sum(np.sin(u)) + sim.steps


U0 = np.array([0.3, 1.0, -0.5, 0.7, 0.2])

SCALE = 2.0


class Scaled:
    """Its __init__ reads a global the test rebinds between calls."""

    def __init__(self, w):
        self.w = SCALE * w

    def energy(self):
        return np.sum(np.cos(self.w) * self.w)


def scaled_energy(w):
    return Scaled(w).energy()


def _jax_hessian(fn, x):
    """jax.hessian of ``fn(jnp, x)`` (the same computation written on jax.numpy)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    return np.asarray(jax.hessian(lambda t: fn(jnp, t))(jnp.asarray(x)))


@pytest.mark.parametrize("f", [flat, flat_by_keyword], ids=["positional", "keywords"])
def test_hessian_of_a_loss_building_a_dataclass_of_its_parameters(f):
    expected = numerical_hessian(f, THETA.copy())
    h = adgen.hessian(f)(THETA.copy())
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-6)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(adgen.hvp(f)(THETA.copy(), v), expected @ v, rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(THETA.copy()), expected,
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(THETA.copy()), expected,
                               rtol=1e-4, atol=1e-6)


def test_the_dataclass_hessian_agrees_with_jax():
    def pure(jnp, theta):
        q = 1 / (1 + jnp.exp(-(jnp.asarray(X) @ theta[:3] + theta[3])))
        return -jnp.mean(Y * jnp.log(q) + (1 - Y) * jnp.log1p(-q))

    np.testing.assert_allclose(adgen.hessian(flat)(THETA.copy()), _jax_hessian(pure, THETA),
                               rtol=1e-9, atol=1e-12)


def test_hessian_through_an_init_setting_a_nonlinear_attribute():
    # d2/dlog_s2 needs the second derivative of exp inside __init__: the rule of the
    # construction differentiates __init__'s jvp, not only its linear part
    theta = np.array([0.4, -0.3])
    expected = numerical_hessian(gaussian_nll, theta.copy())
    h = adgen.hessian(gaussian_nll)(theta.copy())
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-6)

    def pure(jnp, t):
        z = (jnp.asarray(XS) - t[0]) / jnp.exp(t[1])
        return jnp.sum(0.5 * z ** 2 + t[1])

    np.testing.assert_allclose(h, _jax_hessian(pure, theta), rtol=1e-9, atol=1e-12)
    assert abs(h[1, 1]) > 0.1  # (the term a linear-only rule would lose)


@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_of_a_model_built_inside_with_its_parameters_set_afterwards(mutation):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 3))
    y = np.sin(x[:, 0])
    m = MLP([3, 4, 1])
    w1, b = m.W[1], m.b

    def f(w0):  # (a closure over the other parameters, as a user writes it)
        return mlp_loss(([w0.reshape(3, 4), w1], b), x, y)

    w0 = m.W[0].ravel().copy()
    expected = numerical_hessian(f, w0.copy())
    h = adgen.hessian(f, mutation=mutation)(w0.copy())
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-6)
    # the lead's repro: a lambda, the matrix itself (its shape twice)
    h2 = adgen.hessian(lambda w: mlp_loss(([w, w1], b), x, y), mutation=mutation)(
        m.W[0].copy())
    assert h2.shape == (3, 4, 3, 4)
    np.testing.assert_allclose(h2.reshape(12, 12), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_through_a_method_writing_its_argument_on_the_object_built_inside(mutation):
    expected = numerical_hessian(lambda u: simulate(u.copy(), 0.1), U0.copy())
    u = U0.copy()
    h = adgen.hessian(simulate, mutation=mutation)(u, 0.1)
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-6)
    after = U0.copy()
    simulate(after, 0.1)
    np.testing.assert_allclose(u, after)  # the argument ends as one plain call leaves it
    # the time step, a number the object holds: d2/ddt2 by grad of grad
    dd = adgen.grad(adgen.grad(simulate, 1), 1, mutation=mutation)(U0.copy(), 0.1)
    eps = 1e-4
    fd = (simulate(U0.copy(), 0.1 + eps) - 2 * simulate(U0.copy(), 0.1) +
          simulate(U0.copy(), 0.1 - eps)) / eps ** 2
    assert dd == pytest.approx(fd, rel=1e-4, abs=1e-6)


def _in_c(c):
    return damped(U0.copy(), 0.1, c[0])


def test_hessian_through_a_subclass_whose_init_calls_super():
    expected = numerical_hessian(lambda u: damped(u.copy(), 0.1, 0.3), U0.copy())
    h = adgen.hessian(damped)(U0.copy(), 0.1, 0.3)
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-6)
    # the damping, exp(-c) in __init__: its second derivative through the construction
    hc = adgen.hessian(_in_c)(np.array([0.3]))
    np.testing.assert_allclose(hc, numerical_hessian(_in_c, np.array([0.3])), rtol=1e-4,
                               atol=1e-6)


def test_strict_refuses_the_subclass_at_the_users_write_as_grad_does():
    # u *= self.damping overwrites u, which the gradient of that product reads: grad under
    # "strict" refuses it there, and so do the second derivatives (not the generated code)
    for derivative in (adgen.grad, adgen.hessian):
        with pytest.raises(adgen.MutationError, match="u \\*= self.damping") as err:
            derivative(damped, mutation="strict")(U0.copy(), 0.1, 0.3)
        assert err.value.location.file == __file__
        assert "u *= self.damping" in err.value.location.source_line


def test_a_global_the_init_reads_is_read_again_at_each_call():
    global SCALE
    w = np.array([0.2, -0.7, 1.1])
    try:
        for scale in (2.0, -0.5):
            SCALE = scale
            np.testing.assert_allclose(adgen.hessian(scaled_energy)(w.copy()),
                                       numerical_hessian(scaled_energy, w.copy()),
                                       rtol=1e-4, atol=1e-6)
    finally:
        SCALE = 2.0


@dataclass
class WithPostInit:
    mu: np.ndarray

    def __post_init__(self):
        self.sigma = np.exp(self.mu)


def post_init_loss(mu):
    p = WithPostInit(mu)
    return np.sum(p.sigma ** 2)


def test_an_init_calling_a_method_that_sets_attributes():
    # __post_init__ sets self.sigma: a call of it from the jvp of __init__ was refused at
    # second order until session 28; f = sum(exp(2 mu)), its Hessian diag(4 exp(2 mu))
    mu = np.array([0.1, 0.2])
    np.testing.assert_allclose(adgen.hessian(post_init_loss)(mu), np.diag(4 * np.exp(2 * mu)),
                               rtol=1e-12)
