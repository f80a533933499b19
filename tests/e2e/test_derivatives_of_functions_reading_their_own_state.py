"""Derivatives that run the function once per column (hessian, jacfwd, jacfwd(grad(f)), and
jacrev(grad(f)) where it takes forward over reverse), of a function that reads state its own
runs change: a counter in a mutable default, a global or closure counter, an attribute of an
object it increments. JAX traces once, so all of its columns come from one state; adgen's
columns each came from another (hessian gave diag(2, 4, 6) where each column is 2 n for one
n), silently, until session 25. Now refused at the function's def (adgen.repeated_runs);
a counter nothing reads into the value passes, with the right Hessian."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

X = np.array([0.3, -0.7, 1.1])
STATS = {"n": 0}


def default_counter(x, _state={"n": 0}):  # noqa: B006 (the state the test is about)
    _state["n"] += 1
    return np.sum(x ** 2) * _state["n"]


def global_counter(x):
    STATS["n"] += 1
    return np.sum(x ** 2) * STATS["n"]


def make_closure_counter():
    calls = [0]

    def counted(x):
        calls[0] += 1
        return np.sum(x ** 2) * calls[0]
    return counted


class Model:
    def __init__(self):
        self.n = 0

    def loss(self, x):
        self.n += 1
        return np.sum(x ** 2) * self.n


MODEL = Model()


def attribute_counter(x):
    MODEL.n += 1
    return np.sum(x ** 2) * MODEL.n


STATEFUL = [default_counter, global_counter, make_closure_counter(), attribute_counter,
            Model().loss]
DERIVATIVES = {
    "hessian": adgen.hessian,
    "jacfwd(grad)": lambda f: adgen.jacfwd(adgen.grad(f)),
    "jacrev(grad)": lambda f: adgen.jacrev(adgen.grad(f)),
    "jacfwd": adgen.jacfwd,
}


@pytest.mark.parametrize("f", STATEFUL, ids=lambda f: f.__qualname__)
@pytest.mark.parametrize("name", ["hessian", "jacfwd(grad)", "jacfwd"])
def test_columns_from_different_states_are_refused(f, name):
    with pytest.raises(adgen.UnsupportedError, match="reads state that its own runs change"):
        DERIVATIVES[name](f)(X.copy())


@pytest.mark.parametrize("f", STATEFUL, ids=lambda f: f.__qualname__)
def test_jacrev_of_grad_is_refused_or_from_one_state(f):
    # reverse over reverse runs f once (all rows from one state: 2 n I for that n); where it
    # takes forward over reverse (a run per row: the default's and the method's writes) it
    # is refused
    try:
        h = adgen.jacrev(adgen.grad(f))(X.copy())
    except adgen.UnsupportedError as err:
        assert "reads state that its own runs change" in str(err)
        return
    n = h[0, 0] / 2.0
    np.testing.assert_allclose(h, 2.0 * n * np.eye(3))


def test_the_refusal_names_the_def_and_the_values():
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.hessian(default_counter)(X.copy())
    text = str(err.value)
    assert f"{__file__}:20:" in text  # the def's line
    assert "run 1:" in text and "run 2:" in text and "state['n']" in text


CALLS = {"n": 0}


def counter_not_read(x):
    CALLS["n"] += 1
    return np.sum(x ** 2) * x[0]


def test_a_counter_the_value_does_not_read_passes():
    # d2/dx2 of x0 * sum(x^2): H = 2 x0 I + 2 (e0 x^T + x e0^T)
    hand = 2.0 * X[0] * np.eye(3)
    hand[0, :] += 2.0 * X
    hand[:, 0] += 2.0 * X
    for d in (adgen.hessian, lambda f: adgen.jacfwd(adgen.grad(f)),
              lambda f: adgen.jacrev(adgen.grad(f))):
        np.testing.assert_allclose(d(counter_not_read)(X.copy()), hand, atol=1e-12)
