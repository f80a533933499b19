"""jvp / jacfwd of a function that writes its argument in place, called with a global array
the function also reads (``jvp(f, (G,), (v,))``): the write changes the global too, which
the jvp code took for a constant. Silently wrong (jacfwd [0, 20, 3] for [0, 40, 6]) until
session 22; grad, hvp and hessian refused it already. Now refused as grad does; a copy of
the global gives the derivative central differences give."""

import numpy as np
import pytest

import adgen
from adgen.errors import MutationError
from tests.gradcheck import numerical_grad

G = np.array([1.0, 2.0, 3.0])


def writes_its_argument(x):
    x[0] = x[1] * 3.0
    return np.sum(G * x)


def triple_first(y):
    y[0] *= 3.0


def a_helper_writes_it(x):
    triple_first(x)
    return np.sum(G * x ** 2)


def a_loop_reads_it_again(x):
    s = 0.0
    for _ in range(2):
        s = s + np.sum(G * x)  # the second step reads G after the write
        x[0] = x[1] * 3.0
    return s


def _reset():
    G[:] = [1.0, 2.0, 3.0]


@pytest.mark.parametrize("f", [writes_its_argument, a_helper_writes_it, a_loop_reads_it_again],
                         ids=lambda f: f.__name__)
def test_jvp_and_jacfwd_of_the_global_itself_are_refused(f):
    _reset()
    with pytest.raises(MutationError, match="shares memory with G") as err:
        adgen.jvp(f, (G,), (np.array([0.0, 1.0, 0.0]),))
    assert err.value.location.file == __file__
    _reset()
    with pytest.raises(MutationError, match="shares memory with G"):
        adgen.jacfwd(f)(G)
    _reset()
    with pytest.raises(MutationError, match="shares memory with G"):
        adgen.jvp(f, (G[1:],), (np.ones(2),))  # a view of it too


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_second_derivatives_stay_refused(policy):
    _reset()
    with pytest.raises(MutationError, match="shares memory with G"):
        adgen.hessian(writes_its_argument, mutation=policy)(G)


@pytest.mark.parametrize("f", [writes_its_argument, a_helper_writes_it, a_loop_reads_it_again],
                         ids=lambda f: f.__name__)
def test_a_copy_matches_central_differences(f):
    _reset()
    x = G.copy()
    want = numerical_grad(f, (x,), 0)
    v = np.array([0.5, -1.0, 2.0])
    _, dot = adgen.jvp(f, (x.copy(),), (v,))
    assert dot == pytest.approx(want @ v, rel=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(f)(x.copy()), want, rtol=1e-6)
    # the hand formula of the first: sum(G * [3 x1, x1, x2]) = 3 x1 + 2 x1 + 3 x2
    if f is writes_its_argument:
        assert dot == pytest.approx(5.0 * v[1] + 3.0 * v[2])


def test_a_global_read_but_not_written_with_a_plain_function_is_taken():
    def reads_only(x):
        return np.sum(G * x ** 2)

    _reset()
    out, dot = adgen.jvp(reads_only, (G,), (np.ones(3),))
    assert dot == pytest.approx(np.sum(2 * G * G))


def test_a_global_read_before_the_write_is_taken():
    # the jvp code runs in the program's order: G * x is read before x (G) is written
    def read_first(x):
        y = G * x
        x[0] = 5.0
        return np.sum(y * x)

    _reset()
    v = np.array([1.0, -0.5, 0.25])
    want = numerical_grad(read_first, (G.copy(),), 0) @ v
    _, dot = adgen.jvp(read_first, (G,), (v,))
    assert dot == pytest.approx(want, rel=1e-6)
