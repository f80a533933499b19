"""A simulation whose step functions get a config object and update the state in place:
``def drift(x, v, cfg): x += cfg.dt * v``, called from the loss as ``drift(x, v, cfg)``.

The step function's pullback keeps the adjoints of the attributes it reads (``cfg.dt``, and an
array attribute ``spring.k``) in shadow memory, for its caller to collect; a caller that only
passed the object on, without reading an attribute of it, never collected them: the gradient
with respect to the object was silently zero under both policies (``grad(...).dt == 0.0``
where central differences give -2.0). The caller now collects them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]


@dataclass(frozen=True)
class Integrator:
    dt: float = 0.1


@dataclass
class Friction:
    mu: float = 0.2


class Spring:
    def __init__(self, k, rest):
        self.k = k
        self.rest = rest


def drift(x, v, cfg):
    x += cfg.dt * v


def kick(v, x, spring, cfg):
    v -= cfg.dt * spring.k * (x - spring.rest)
    return v


def energy_after_drift(x0, v, cfg):
    x = x0.copy()
    drift(x, v, cfg)
    return np.sum(x ** 2)


def energy_after_kick(v0, x, spring, cfg):
    v = v0.copy()
    v = kick(v, x, spring, cfg)
    return 0.5 * np.sum(v ** 2)


def slowed(v0, push, friction):
    v = v0.copy()
    brake(v, push, friction)
    return np.sum(v ** 3)


def brake(v, push, friction):
    v -= friction.mu * push


def simulate(x0, v0, spring, cfg, steps=4):
    x, v = x0.copy(), v0.copy()
    for _ in range(steps):
        drift(x, v, cfg)
        kick(v, x, spring, cfg)
    return np.sum(x ** 2) + 0.5 * np.sum(v ** 2)


X0 = np.array([0.5, -1.0, 2.0])
V0 = np.array([1.0, -2.0, 0.5])


def by_dt(f, cfg, *args):
    """d f / d cfg.dt by central differences (a frozen dataclass: replaced, not set)."""
    h = 1e-6
    return (f(*args, dataclasses.replace(cfg, dt=cfg.dt + h)) -
            f(*args, dataclasses.replace(cfg, dt=cfg.dt - h))) / (2 * h)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_frozen_config_passed_to_a_step_gets_its_gradient(mutation):
    cfg = Integrator(0.1)
    g = adgen.grad(energy_after_drift, argnums=2, mutation=mutation)(X0, V0, cfg)
    assert isinstance(g, Integrator)
    # x = x0 + dt v: d/d dt sum(x^2) = 2 sum(x v)
    assert np.isclose(g.dt, 2.0 * np.sum((X0 + 0.1 * V0) * V0))
    assert np.isclose(g.dt, by_dt(energy_after_drift, cfg, X0, V0), rtol=1e-6)
    g_x0 = adgen.grad(energy_after_drift, mutation=mutation)(X0, V0, cfg)
    assert_grad_close(g_x0, numerical_grad(energy_after_drift, (X0, V0, cfg), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_plain_object_with_an_array_attribute_gets_its_gradient(mutation):
    spring = Spring(np.array([1.0, 2.0, 3.0]), 0.25)
    cfg = Integrator(0.1)
    g = adgen.grad(energy_after_kick, argnums=(2, 3), mutation=mutation)(V0, X0, spring, cfg)
    g_spring, g_cfg = g
    assert_grad_close(g_spring, numerical_grad(
        lambda s: energy_after_kick(V0, X0, s, cfg), (spring,), 0))
    assert np.isclose(g_cfg.dt, by_dt(lambda c: energy_after_kick(V0, X0, spring, c), cfg),
                      rtol=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_mutable_dataclass_passed_to_a_step_gets_its_gradient(mutation):
    friction = Friction(0.2)
    g = adgen.grad(slowed, argnums=2, mutation=mutation)(V0, X0, friction)
    # sum((v0 - mu push)^3): d/d mu = -3 sum((v0 - mu push)^2 push)
    assert np.isclose(g.mu, -3.0 * np.sum((V0 - 0.2 * X0) ** 2 * X0))
    assert_grad_close(g, numerical_grad(slowed, (V0, X0, friction), 2))


def test_a_loop_of_steps_gets_the_configs_gradient_under_save():
    spring, cfg = Spring(np.array([1.0, 2.0, 3.0]), 0.25), Integrator(0.1)
    g_spring, g_cfg = adgen.grad(simulate, argnums=(2, 3))(X0, V0, spring, cfg)
    assert_grad_close(g_spring, numerical_grad(
        lambda s: simulate(X0, V0, s, cfg), (spring,), 0))
    assert np.isclose(g_cfg.dt, by_dt(lambda c: simulate(X0, V0, spring, c), cfg), rtol=1e-6)


def test_a_loop_of_steps_is_refused_under_strict():
    # kick overwrites v, which the gradient of drift's x += cfg.dt * v reads
    spring, cfg = Spring(np.array([1.0, 2.0, 3.0]), 0.25), Integrator(0.1)
    with pytest.raises(adgen.MutationError, match=r"kick\(v, x, spring, cfg\) overwrites v"):
        adgen.grad(simulate, argnums=(2, 3), mutation="strict")(X0, V0, spring, cfg)


def drift_returning(x, v, cfg):
    x += cfg.dt * v
    return x


def loop_of_returning_drifts(x0, v, cfg):
    x = x0.copy()
    for _ in range(3):
        x = drift_returning(x, v, cfg)
    return np.sum(x ** 2)


def loop_of_drifts(x0, v, cfg):
    x = x0.copy()
    for _ in range(3):
        drift(x, v, cfg)
    return np.sum(x ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [loop_of_returning_drifts, loop_of_drifts])
def test_a_loop_assigning_the_helpers_result_and_one_calling_it_as_a_statement(f, mutation):
    # x = drift_returning(x, v, cfg) in a loop was refused before session 17 (the loop took
    # cfg for an array the helper's result may share); the signature now says cfg is an
    # object (kinds.OBJECT). x = x0 + 3 dt v: d/d dt sum(x^2) = 6 sum(x v)
    cfg = Integrator(0.1)
    g = adgen.grad(f, argnums=(0, 2), mutation=mutation)(X0, V0, cfg)
    assert np.isclose(g[1].dt, 6.0 * np.sum((X0 + 0.3 * V0) * V0))
    assert np.isclose(g[1].dt, by_dt(f, cfg, X0, V0), rtol=1e-6)
    assert_grad_close(g[0], numerical_grad(lambda x0: f(x0, V0, cfg), (X0,), 0))
