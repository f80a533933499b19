"""A method that writes its array argument, called on an object the function is given.

A simulator or model passed into a loss (``def loss(model, u): model.step(u); ...`` with
``Heat.step`` doing ``u += self.dt * lap(u)``) was refused when the gradient ran ("Heat.step
... writes an array argument ... and is called through a variable, a method or a closure"):
adgen followed such a call only on ``self``, on a global object or by the class's name. The
argument's class is now part of the signature the gradient is compiled for
(``analyses.kinds.OBJECT``), and the function is compiled for it
(``bound_callees.typed_for``): ``model.step(u)`` is the call of ``Heat.step`` with the model
first, which adgen follows like ``step(u, dt)``; so is a helper given the model
(``run(model, u)``). Every assumption is checked at each call: another class (a subclass
overriding ``step``) compiles again, ``Heat.step`` rebound compiles again, and an object
holding a ``step`` of its own runs that one, as Python does.

Gradients against central differences under both policies, with the argument's final
contents checked against a plain call.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def lap(u):
    return np.roll(u, 1) - 2 * u + np.roll(u, -1)


class Heat:
    def __init__(self, dt):
        self.dt = dt

    def step(self, u):
        u += self.dt * lap(u)


class Leaky(Heat):
    def step(self, u):
        u *= 0.9
        super().step(u)


class Reacting(Heat):
    """A step whose gradient reads u itself (u * lap(u)), not only lap(u)'s new array."""

    def step(self, u):
        u += self.dt * u * lap(u)


class Buffered(Heat):
    """A model with an array of its own that its step writes before reading it."""

    def __init__(self, dt, n):
        self.dt = dt
        self.flux = np.zeros(n)

    def step(self, u):
        self.flux[:] = lap(u)
        u += self.dt * self.flux * u


def loss(model, u):
    model.step(u)
    return np.sum(u ** 3)


def loss_two_steps(model, u):
    model.step(u)
    model.step(u)
    return np.sum(u ** 2)


def advance(model, u, n):
    for _ in range(n):
        model.step(u)


def loss_through_a_helper(model, u):
    advance(model, u, 3)
    return np.sum(u ** 3)


def loss_pair(a, b, u):
    a.step(u)
    b.step(u)
    return np.sum(u ** 3)


U0 = np.linspace(0.0, 1.0, 6) ** 2


def expected(f, args, argnum):
    def plain(*a):
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in a]
        return f(*a)
    return numerical_grad(plain, args, argnum)


def check(f, args, argnum, mutation):
    given = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    g = adgen.grad(f, argnums=argnum, mutation=mutation)(*given)
    np.testing.assert_allclose(g, expected(f, args, argnum), rtol=1e-6, atol=1e-8)
    after = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    f(*after)  # the gradient's call leaves the argument as a plain call does
    np.testing.assert_allclose(given[-1], after[-1])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("model", [Heat(0.1), Leaky(0.1)], ids=["Heat", "Leaky"])
def test_a_method_of_a_model_parameter_writing_its_argument(model, mutation):
    check(loss, (model, U0), 1, mutation)


def test_a_model_writing_an_array_of_its_own():
    check(loss, (Buffered(0.1, 6), U0), 1, "save")
    # u += self.dt * self.flux * u: the write's own gradient reads u (as in a function)
    with pytest.raises(adgen.MutationError, match=r"u = u \+ \(self.dt \* self.flux \* u\)"):
        adgen.grad(loss, argnums=1, mutation="strict")(Buffered(0.1, 6), U0.copy())


def test_two_steps_follow_under_save_and_strict_names_the_line():
    # Heat.step's gradient reads lap(u), a new array, and not u: strict runs (until session
    # 19 it refused, taking lap's result for a view of u)
    check(loss_two_steps, (Heat(0.1), U0), 1, "save")
    check(loss_two_steps, (Heat(0.1), U0), 1, "strict")
    # Reacting.step's gradient reads u, which the second step overwrites: as step(u, dt)
    # called twice by its name
    check(loss_two_steps, (Reacting(0.1), U0), 1, "save")
    with pytest.raises(adgen.MutationError, match=r"line \d+ \(model.step\(u\)\)"):
        adgen.grad(loss_two_steps, argnums=1, mutation="strict")(Reacting(0.1), U0.copy())


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_gradient_with_respect_to_the_model(mutation):
    g = adgen.grad(loss, argnums=0, mutation=mutation)(Heat(0.1), U0.copy())
    dt = numerical_grad(lambda dt: loss(Heat(dt), U0.copy()), (0.1,), 0)
    np.testing.assert_allclose(g.dt, dt, rtol=1e-6)


def test_the_model_handed_to_a_helper():
    check(loss_through_a_helper, (Heat(0.05), U0), 1, "save")
    check(loss_through_a_helper, (Leaky(0.05), U0), 1, "save")
    g = adgen.grad(loss_through_a_helper, argnums=0)(Heat(0.05), U0.copy())
    dt = numerical_grad(lambda dt: loss_through_a_helper(Heat(dt), U0.copy()), (0.05,), 0)
    np.testing.assert_allclose(g.dt, dt, rtol=1e-6)
    check(loss_through_a_helper, (Heat(0.05), U0), 1, "strict")  # (refused until session 19)
    # a Reacting step overwrites u, which its gradient reads: strict refuses
    with pytest.raises(adgen.MutationError, match=r"overwrites u"):
        adgen.grad(loss_through_a_helper, argnums=1, mutation="strict")(Reacting(0.05),
                                                                       U0.copy())


def test_two_models_and_one_model_passed_twice():
    h = Heat(0.1)
    check(loss_pair, (h, h, U0), 2, "save")
    check(loss_pair, (h, Leaky(0.2), U0), 2, "save")
    check(loss_pair, (Leaky(0.2), h, U0), 2, "save")


@pytest.mark.parametrize("mutation", POLICIES)
def test_each_call_checks_the_class_and_the_method(mutation, monkeypatch):
    g = adgen.grad(loss, argnums=1, mutation=mutation)

    def agrees(model):
        np.testing.assert_allclose(g(model, U0.copy()), expected(loss, (model, U0), 1),
                                   rtol=1e-6, atol=1e-8)

    m = Heat(0.1)
    agrees(m)
    agrees(Leaky(0.1))  # a subclass overriding step: its own step
    agrees(m)
    m.step = lambda u: None  # a step of the object's own, writing nothing: Python runs it
    np.testing.assert_allclose(g(m, U0.copy()), 3 * U0 ** 2)
    del m.step
    agrees(m)

    def doubled(self, u):
        u *= 2.0
    monkeypatch.setattr(Heat, "step", doubled)  # the class's step rebound
    np.testing.assert_allclose(g(m, U0.copy()), 3 * 8 * U0 ** 2)
    monkeypatch.undo()
    agrees(m)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_writing_step_of_the_objects_own_stays_refused_at_the_line(mutation):
    m = Heat(0.1)
    other = Leaky(0.1)
    m.step = other.step  # a bound method of another object, writing u
    with pytest.raises(adgen.AdgenError, match=r"test_methods_on_object_parameters.py:\d+"):
        adgen.grad(loss, argnums=1, mutation=mutation)(m, U0.copy())


@pytest.mark.parametrize("mutation", POLICIES)
def test_value_and_grad_and_vjp(mutation):
    v, g = adgen.value_and_grad(loss, argnums=1, mutation=mutation)(Heat(0.1), U0.copy())
    assert v == pytest.approx(loss(Heat(0.1), U0.copy()))
    np.testing.assert_allclose(g, expected(loss, (Heat(0.1), U0), 1), rtol=1e-6, atol=1e-8)
    out, pullback = adgen.vjp(loss, Heat(0.1), U0.copy(), mutation=mutation)
    np.testing.assert_allclose(pullback(1.0)[1], expected(loss, (Heat(0.1), U0), 1),
                               rtol=1e-6, atol=1e-8)


def loss_built_inside(u, dt):
    sim = Heat(dt)
    for _ in range(3):
        sim.step(u)
    return np.sum(u ** 2)


def loss_built_inside_by_class(u, dt):
    sim = Heat(dt)
    for _ in range(3):
        Heat.step(sim, u)
    return np.sum(u ** 2)


def test_an_object_built_inside():
    # three steps, under both policies: each step's gradient reads lap(u), a new array
    # (strict refused this until session 19, taking lap's result for a view of u)
    for mutation in POLICIES:
        g = adgen.grad(loss_built_inside, argnums=(0, 1), mutation=mutation)(U0.copy(), 0.1)
        np.testing.assert_allclose(g[0], expected(loss_built_inside, (U0, 0.1), 0), rtol=1e-6)
        np.testing.assert_allclose(g[1], expected(loss_built_inside, (U0, 0.1), 1), rtol=1e-6)


class Schemed(Heat):
    """An __init__ choosing the scheme: the object then holds a step of its own."""

    def __init__(self, dt, scheme):
        self.dt = dt
        if scheme == "halve":
            self.step = self.halve

    def halve(self, u):
        u *= 0.5


def loss_schemed(u, scheme):
    sim = Schemed(0.1, scheme)
    sim.step(u)
    return np.sum(u ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_object_built_inside_is_checked_when_the_call_runs(mutation):
    g = adgen.grad(loss_schemed, mutation=mutation)(U0.copy(), "euler")
    np.testing.assert_allclose(g, expected(loss_schemed, (U0, "euler"), 0), rtol=1e-6)
    # sim.step is the object's own halve here, not Schemed.step: refused at the call's line
    with pytest.raises(adgen.UnsupportedError,
                       match=r"(?s)test_methods_on_object_parameters.py:\d+.*step of its own.*"
                             r"sim.step\(u\)"):
        adgen.grad(loss_schemed, mutation=mutation)(U0.copy(), "halve")


def test_an_object_built_inside_called_by_its_class():
    g = adgen.grad(loss_built_inside_by_class, argnums=(0, 1))(U0.copy(), 0.1)
    np.testing.assert_allclose(g[0], expected(loss_built_inside, (U0, 0.1), 0), rtol=1e-6)
    np.testing.assert_allclose(g[1], expected(loss_built_inside, (U0, 0.1), 1), rtol=1e-6)


class Weights:
    def __init__(self, w, k=2.0):
        self.w = w
        self.k = k

    def energy(self, x):
        return np.sum(self.w ** 2 * x) * self.k

    def scaled(self, x):
        self.w[1:] *= 3.0  # an array of the object written, then read by a method
        return self.energy(x)


def loss_scaled(m, x):
    return m.scaled(x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_writing_an_array_of_its_object_then_reading_it(mutation):
    w, x = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    g = adgen.grad(loss_scaled, mutation=mutation)(Weights(w.copy()), x)
    np.testing.assert_allclose(
        g.w, numerical_grad(lambda v: loss_scaled(Weights(v.copy()), x), (w,), 0), rtol=1e-6)
    np.testing.assert_allclose(
        g.k, numerical_grad(lambda k: loss_scaled(Weights(w.copy(), k), x), (2.0,), 0),
        rtol=1e-6)


def test_forward_mode_and_second_derivatives():
    d = np.array([0.3, -1.0, 0.5, 2.0, -0.2, 1.0])
    h = Heat(0.1)
    out, tangent = adgen.jvp(lambda v: loss(h, v.copy()), (U0.copy(),), (d,))
    assert out == pytest.approx(loss(h, U0.copy()))
    assert tangent == pytest.approx(expected(loss, (h, U0), 1) @ d, rel=1e-6)
    # second derivatives through model.step on a parameter (refused at the call until
    # session 18): the jvp code is compiled for the model's class too
    g = adgen.grad(loss, argnums=1)
    rows = [numerical_grad(lambda v, k=k: g(Heat(0.1), v.copy())[k], (U0.copy(),), 0)
            for k in range(U0.size)]
    np.testing.assert_allclose(adgen.hessian(loss, argnums=1)(Heat(0.1), U0.copy()),
                               np.array(rows), rtol=1e-5, atol=1e-6)


def test_the_functions_code_replaced_compiles_again():
    # (what IPython's autoreload does to an edited function): the copy compiled for Heat
    # follows the new code
    def edited(model, u):
        pass

    def cubed(model, u):
        model.step(u)
        return np.sum(u ** 4)

    edited.__code__ = loss.__code__
    g = adgen.grad(edited, argnums=1)
    np.testing.assert_allclose(g(Heat(0.1), U0.copy()), expected(loss, (Heat(0.1), U0), 1),
                               rtol=1e-6, atol=1e-8)
    edited.__code__ = cubed.__code__
    np.testing.assert_allclose(g(Heat(0.1), U0.copy()), expected(cubed, (Heat(0.1), U0), 1),
                               rtol=1e-6, atol=1e-8)


class Signal:
    def __init__(self, n):
        self.z = np.zeros(n)

    def power(self, a):
        self.z[...] = a  # writes an array of its object
        return np.sum(self.z ** 3)


def power_of_a_built_signal(a):
    s = Signal(3)
    return s.power(a)


def power_of(s, a):
    return s.power(a)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_writing_an_array_of_an_object(mutation):
    a = np.array([0.5, -1.0, 2.0])
    # passed in: followed
    g = adgen.grad(power_of, argnums=1, mutation=mutation)(Signal(3), a)
    np.testing.assert_allclose(g, 3 * a ** 2, rtol=1e-10)
    # built here: followed too (refused at the call until session 22, 'pass it in')
    g = adgen.grad(power_of_a_built_signal, mutation=mutation)(a)
    np.testing.assert_allclose(g, 3 * a ** 2, rtol=1e-10)


class Config:
    def __init__(self, n, dt):
        self.dt = dt
        self.flux = np.zeros(n)  # scratch the step fills before reading it


def step_returning(u, cfg):
    cfg.flux[:] = np.roll(u, 1) - u
    u += cfg.dt * cfg.flux * u
    return u


def loss_of_a_loop(u0, cfg):
    u = u0.copy()
    for _ in range(3):
        u = step_returning(u, cfg)  # refused before session 17 ('took it for an array')
    return np.sum(u ** 2)


def test_a_config_object_in_a_loop_of_steps_returning_the_array():
    cfg = Config(6, 0.1)
    g = adgen.grad(loss_of_a_loop, argnums=(0, 1))(U0.copy(), cfg)
    np.testing.assert_allclose(g[0], expected(loss_of_a_loop, (U0, cfg), 0), rtol=1e-6)
    dt = numerical_grad(lambda d: loss_of_a_loop(U0, Config(6, d)), (0.1,), 0)
    np.testing.assert_allclose(g[1].dt, dt, rtol=1e-6)
    # strict: the step's own gradient reads the u it overwrites (as written in a function)
    with pytest.raises(adgen.MutationError, match=r"compute it out of place"):
        adgen.grad(loss_of_a_loop, mutation="strict")(U0.copy(), cfg)


class Holding:
    """A model holding the very array its step writes through its argument."""

    def __init__(self, u, dt):
        self.u = u
        self.dt = dt

    def step(self, v):
        v += self.dt * lap(self.u) * self.u


def loss_holding(sim, v):
    sim.step(v)
    return np.sum(v ** 2) + np.sum(sim.u ** 3)


def test_a_model_holding_the_array_its_step_writes():
    # sim.u is v: each name of the one buffer gets its gradient (as for a function
    # step(sim, v) called by its name); strict names the write that overwrites what it reads
    def shared(v):
        v = v.copy()
        return loss_holding(Holding(v, 0.1), v)

    v = U0.copy()
    g = adgen.grad(loss_holding, argnums=(0, 1))(Holding(v, 0.1), v)
    np.testing.assert_allclose(g[1], numerical_grad(shared, (U0,), 0), rtol=1e-6)
    np.testing.assert_allclose(g[0].u, g[1])
    v = U0.copy()
    with pytest.raises(adgen.MutationError, match=r"overwrites self.u"):
        adgen.grad(loss_holding, argnums=1, mutation="strict")(Holding(v, 0.1), v)
