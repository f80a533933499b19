"""What explain says a guarded write may overwrite: with example arguments, only values that
held something a write can change in that run (a float step size never is); without them, any
parameter may be an array sharing the written one's memory, so it stays listed."""

import numpy as np
from gradcheck import check_grad

import adgen


def step(x, v, dt):
    x += dt * v


def simulate(x, v):
    dt = 0.1
    for _ in range(3):
        step(x, v, dt)
    return np.sum(x ** 2)


def simulate_aliased(x, v):
    for _ in range(2):
        step(x, v, x)  # dt is x itself here: the write does overwrite it
    return np.sum(x ** 2)


def leapfrog(x, v, dt):
    for _ in range(3):
        x += dt * v
        v -= dt * x
    return np.sum(x ** 2) + np.sum(v ** 2)


class Particles:
    def __init__(self, dt):
        self.dt = dt

    def advance(self, x, v):
        dt = self.dt
        step(x, v, dt)
        return np.sum(x ** 3)


def row(rows, text):
    (found,) = [r for r in rows if r.construct == text]
    return found


def listed(reason):
    """The names after 'may overwrite', before ', read by'."""
    return reason.split("may overwrite ", 1)[1].split(", read by")[0].split(", ")


def test_a_float_passed_to_a_helper_is_not_listed():
    rows = adgen.explain(simulate, np.ones(3), np.full(3, 0.5), file=None)
    site = row(rows, "x += dt * v")
    assert site.decision == "guarded-save"
    assert listed(site.reason) == ["v"], site.reason
    assert "not dt" in site.reason and site.overwrites == (("v", 12),)
    check_grad(simulate, [np.ones(3), np.full(3, 0.5)], argnums=(0, 1))


def test_an_array_passed_for_it_is_listed():
    rows = adgen.explain(simulate_aliased, np.ones(3), np.full(3, 0.5), file=None)
    site = row(rows, "x += dt * v")
    assert listed(site.reason) == ["dt", "v"], site.reason
    check_grad(simulate_aliased, [np.ones(3), np.full(3, 0.5)], argnums=(0, 1))


def test_without_example_arguments_a_parameter_may_be_an_array():
    site = row(adgen.explain(step, file=None), "x += dt * v")
    assert listed(site.reason) == ["dt", "v"], site.reason


def test_a_float_argument_and_a_method():
    rows = adgen.explain(leapfrog, np.ones(3), np.full(3, 0.5), 0.1, file=None)
    for r in rows:
        assert "dt" not in listed(r.reason), r
    p = Particles(0.2)
    site = row(adgen.explain(p.advance, np.ones(2), np.ones(2), file=None), "x += dt * v")
    assert listed(site.reason) == ["v"], site.reason
    check_grad(p.advance, [np.ones(2), np.full(2, 0.3)], argnums=(0, 1))
    # a lambda around the helper: the same row
    f = lambda x, v: simulate(x, v)  # noqa: E731
    site = row(adgen.explain(f, np.ones(3), np.ones(3), file=None), "x += dt * v")
    assert listed(site.reason) == ["v"], site.reason
