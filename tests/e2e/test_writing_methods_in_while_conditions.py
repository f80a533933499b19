"""A method that writes its argument in place, called in a ``while`` condition on an object
the function builds (``while sim.sweep(u) > tol``), runs at each evaluation of the condition;
called twice in one statement, or in a comprehension, it runs each time as Python finds it.

adgen compiles the call as the class's function (``Relax.sweep(sim, u)``), which holds only
while ``sim`` holds no ``sweep`` of its own, and checked that once, before the loop: a sweep
that switches the object to another scheme after a warm-up (``self.sweep = coarse``) had the
class's sweep run again at the next evaluation, where Python runs ``coarse``, and the gradient
was silently wrong; so did ``k = sim.sweep(u) + sim.sweep(u)``, ``[sim.sweep(u) for _ in
range(3)]``, ``k = sim.switch() + sim.sweep(u)`` and ``return sim.sweep(u) * np.sum(u)``.
Expected values: central differences (tests/gradcheck.py).
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -1.2, 2.0, 0.7])
POLICIES = ["save", "strict"]


def coarse(u):
    u += 0.5
    return 10


class Relax:
    def __init__(self, h, switch_after):
        self.h = h
        self.n = 0
        self.switch_after = switch_after

    def sweep(self, u):
        u += self.h
        self.n = self.n + 1
        if self.n == self.switch_after:
            self.sweep = coarse  # a cheaper scheme once warmed up
        return self.n

    def switch(self):
        self.sweep = coarse
        return 1


def relax_while(x):
    u = x * x
    sim = Relax(0.1, 2)
    while sim.sweep(u) < 4:
        u = u * 0.9
    return np.sum(np.sin(u))


def relax_while_continue(x):
    u = x * x
    sim = Relax(0.1, 2)
    k = 0
    while sim.sweep(u) < 4:
        k = k + 1
        if k % 2:
            u = u * 0.9
            continue
        u = u * 1.1
    return np.sum(np.sin(u))


def relax_no_switch(x):
    u = x * x
    sim = Relax(0.1, -1)
    while sim.sweep(u) < 4:
        u = u * 0.9
    return np.sum(np.sin(u))


def twice_in_a_statement(x):
    u = x * x
    sim = Relax(0.1, 1)
    k = sim.sweep(u) + sim.sweep(u)
    return np.sum(np.sin(u)) * k


def in_a_comprehension(x):
    u = x * x
    sim = Relax(0.1, 1)
    ks = [sim.sweep(u) for _ in range(3)]
    return np.sum(np.sin(u)) * ks[0]


def switched_in_the_statement(x):
    u = x * x
    sim = Relax(0.1, -1)
    k = sim.switch() + sim.sweep(u)
    return np.sum(np.sin(u)) * k


def returned(x):
    u = x * x
    sim = Relax(0.1, 1)
    return sim.sweep(u) + sim.sweep(u) * np.sum(np.sin(u))


def twice_no_switch(x):
    u = x * x
    sim = Relax(0.1, -1)
    k = sim.sweep(u) + sim.sweep(u)
    ks = [sim.sweep(u) for _ in range(2)]
    return sim.sweep(u) + np.sum(np.sin(u)) * k * ks[1]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [twice_in_a_statement, in_a_comprehension,
                               switched_in_the_statement, returned])
def test_a_method_switched_within_a_statement_is_refused(f, mutation):
    with pytest.raises(UnsupportedError, match="holds a sweep of its own") as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert info.value.location.line == f.__code__.co_firstlineno + 3


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_twice_in_a_statement(mutation):
    g = adgen.grad(twice_no_switch, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(twice_no_switch, (X.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [relax_while, relax_while_continue])
def test_a_method_switched_inside_the_loop_is_refused(f, mutation):
    with pytest.raises(UnsupportedError, match="holds a sweep of its own") as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert info.value.location.line == f.__code__.co_firstlineno + \
        (3 if f is relax_while else 4)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_in_a_while_condition(mutation):
    g = adgen.grad(relax_no_switch, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(relax_no_switch, (X.copy(),), 0))
