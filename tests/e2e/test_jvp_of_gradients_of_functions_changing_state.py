"""``adgen.jvp(adgen.grad(f), (x,), (v,))`` runs f twice: the gradient, then the gradient of
its derivative along v. A function reading state its own runs change (a global dict's counter,
a global object counting its calls) gave the second run's derivative, silently: [9, 0] where
[6, 0] is right (the Hessian-vector product at the state the call found). It is refused now,
as hessian, jacfwd and jacrev of grad refuse it, naming the function; a function whose runs
agree is differentiated as before. Expected values: by hand.
"""

import numpy as np
import pytest

import adgen

STATE = {"n": 1.0}


def counted_in_a_dict(x):
    STATE["n"] = STATE["n"] + 1.0
    return np.sum(x ** 3) * STATE["n"]


class Counter:
    def __init__(self):
        self.calls = 0

    def tick(self):
        self.calls += 1
        return self.calls


COUNTER = Counter()


def counted_by_an_object(x):
    k = COUNTER.tick()
    return np.sum(x ** 3) * k


def logged(x):
    STATE["n"] = STATE["n"] + 1.0  # (state the value does not read)
    return np.sum(x ** 3)


X = np.array([0.5, -0.2])
V = np.array([1.0, 0.5])


@pytest.mark.parametrize("f", [counted_in_a_dict, counted_by_an_object])
def test_refused_where_the_runs_differ(f):
    STATE["n"] = 1.0
    COUNTER.calls = 0
    with pytest.raises(adgen.UnsupportedError, match="reads state that its own runs change") \
            as err:
        adgen.jvp(adgen.grad(f), (X.copy(),), (V,))
    assert err.value.location.file == __file__
    assert "jvp(grad(f))" in str(err.value)


def test_runs_that_agree_are_differentiated():
    STATE["n"] = 1.0
    g, hv = adgen.jvp(adgen.grad(logged), (X.copy(),), (V,))
    np.testing.assert_allclose(g, 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(hv, 6 * X * V, rtol=1e-12)
    assert STATE["n"] == 3.0  # (two runs: the gradient, then its derivative)
