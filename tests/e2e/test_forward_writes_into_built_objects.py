"""Forward mode of a function that writes in place into an array of an object it builds from
a call holding global arrays (``s = System(A0, B0); s.x[:] = x0``, state objects as
simulation code writes them). The object's array counted as a global one, and jvp, jacfwd,
hvp and hessian were refused with a wrong reason ('an in-place write of a global or closure
array'). Forward mode now follows the write, checked when it runs (the array written is not
one a global holds: refused at the line, naming it); second derivatives are refused at the
write's line (they were refused at the generated code's line)."""

import numpy as np
import pytest

import adgen
from adgen.errors import UnsupportedError
from tests.gradcheck import numerical_grad


class System:
    def __init__(self, A, B):
        self.A, self.B = A, B
        self.x = np.zeros(A.shape[0])

    def step(self, u):
        self.x = self.A @ self.x + self.B * u
        return self.x


class Holder:
    def __init__(self, A, x):
        self.A, self.x = A, x


A0 = np.array([[1.0, 0.1], [0.0, 1.0]])
B0 = np.array([0.0, 0.1])
X0 = np.array([1.0, 0.0])
WORK = np.zeros(2)


def lqr_cost(K):
    s = System(A0, B0)
    s.x[:] = [1.0, 0.0]
    cost = 0.0
    for _ in range(30):
        u = -K @ s.x
        s.step(u)
        cost += s.x @ s.x + 0.1 * u * u
    return cost


def updated_in_place(K):
    s = System(A0, B0)
    s.x[:] = K * 2.0
    s.x += K ** 2
    return np.sum(s.x * K)


def writes_a_held_global(K):
    h = Holder(A0, X0)
    h.x[:] = K * 2.0  # h.x is X0
    return np.sum(X0 * K)


def writes_a_global(K):
    WORK[:] = K
    return np.sum(WORK * K)


K = np.array([0.5, 0.8])


@pytest.mark.parametrize("f", [lqr_cost, updated_in_place], ids=lambda f: f.__name__)
def test_jvp_and_jacfwd_match_central_differences(f):
    want = numerical_grad(f, (K,), 0)
    v = np.array([0.3, -1.2])
    out, dot = adgen.jvp(f, (K,), (v,))
    assert out == pytest.approx(f(K))
    assert dot == pytest.approx(want @ v, rel=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(f)(K), want, rtol=1e-6)


def test_hand_formula_of_the_update_in_place():
    # s.x = 2K + K**2, f = sum((2K + K**2) * K) = sum(2K**2 + K**3): jvp (4K + 3K**2) . v
    v = np.array([1.0, 2.0])
    _, dot = adgen.jvp(updated_in_place, (K,), (v,))
    assert dot == pytest.approx(np.sum((4 * K + 3 * K ** 2) * v))


def test_a_write_into_a_global_the_object_holds_is_refused_when_it_runs():
    X0[:] = [1.0, 0.0]
    with pytest.raises(UnsupportedError) as err:
        adgen.jvp(writes_a_held_global, (K,), (np.ones(2),))
    assert "X0" in str(err.value)
    assert err.value.location.line == writes_a_held_global.__code__.co_firstlineno + 2
    np.testing.assert_array_equal(X0, [1.0, 0.0])  # refused before the write


def test_a_write_into_a_global_by_name_stays_refused():
    with pytest.raises(UnsupportedError, match="global or closure array"):
        adgen.jvp(writes_a_global, (K,), (np.ones(2),))


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_second_derivatives_refused_at_the_write(policy):
    for d in (adgen.hessian(lqr_cost, mutation=policy),
              adgen.jacfwd(adgen.grad(lqr_cost, mutation=policy))):
        with pytest.raises(UnsupportedError, match="second derivatives") as err:
            d(K)
        assert err.value.location.file == __file__
        assert err.value.location.line == lqr_cost.__code__.co_firstlineno + 2
