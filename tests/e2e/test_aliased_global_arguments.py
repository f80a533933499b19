"""A global (or closure) array passed as the argument a function writes in place, while the
function reads that global: ``def f(x): y = G * x; x[0] = 5.0; ...`` called as ``grad(f)(G)``.

adgen takes arguments and globals for separate arrays. Through the alias, ``x[0] = 5.0``
changed ``G``, and the pullback, which reads ``G`` after the forward ran, computed with the
written value: a silently wrong gradient under both policies ([25, 8, 18, 32] where the
gradient at a copy of G is [5, 8, 18, 32]). Now the call is refused before the forward runs
(``MutationError`` naming the argument, the global, the write's line and ``G.copy()``), and
the form it hints at gives the gradient of central differences.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

G0 = np.array([1.0, 2.0, 3.0, 4.0])
G = G0.copy()
WORK = np.zeros(4)
cfg = types.SimpleNamespace(W=G0.copy())

POLICIES = ["save", "strict"]


@pytest.fixture(autouse=True)
def _fresh_globals():
    G[:] = G0
    WORK[:] = 0.0
    cfg.W[:] = G0
    yield
    G[:] = G0
    WORK[:] = 0.0
    cfg.W[:] = G0


def reads_global(x):
    y = G * x
    x[0] = 5.0
    return np.sum(y * x)


def times_g(x):
    return G * x


def helper_reads_global(x):
    y = times_g(x)
    x[0] = 5.0
    return np.sum(y * x)


def make_closure():
    H = np.array([1.0, 2.0, 3.0, 4.0])

    def closure_reads(x):
        y = H * x
        x[0] = 5.0
        return np.sum(y * x)

    return closure_reads, H


def reads_attribute(x):
    y = cfg.W * x
    x[0] = 5.0
    return np.sum(y * x)


def reads_tail(x):
    y = G[1:] * x
    x[0] = 5.0
    return np.sum(y * x)


def adds_in_place(x):
    y = np.sin(G * x)
    x += 1.0
    return np.sum(y * x)


def exp_out(x):
    y = G * x
    np.exp(x, out=x)
    return np.sum(y * x)


def writes_second(c, s):
    y = G * s * c
    s[0] = 5.0
    return np.sum(y * s)


def writes_global(x):
    y = x * x
    WORK[0] = 5.0
    return np.sum(y)


def _refused(call, name, line_text):
    with pytest.raises(adgen.MutationError) as info:
        call()
    text = str(info.value)
    assert f"{name}.copy()" in text and line_text in text, text
    return text


def _copy_gives_central(fun, x, argnum=0, args=None, grad_of=None):
    """The hinted form: a copy of the global, against central differences at a copy."""
    args = args if args is not None else (x,)
    expected = numerical_grad(fun, tuple(a.copy() for a in args), argnum)
    got = (grad_of or adgen.grad(fun, argnum))(*(a.copy() for a in args))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fun", [reads_global, helper_reads_global, adds_in_place, exp_out],
                         ids=lambda f: f.__name__)
def test_global_passed_as_the_written_argument_is_refused(fun, policy):
    text = _refused(lambda: adgen.grad(fun, mutation=policy)(G), "G", "argument 0 (x)")
    assert "test_aliased_global_arguments.py" in text
    np.testing.assert_array_equal(G, G0)  # refused before the forward ran
    _copy_gives_central(fun, G0)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_refusal_names_the_line_of_the_write(policy):
    text = _refused(lambda: adgen.grad(reads_global, mutation=policy)(G), "G", "x[0] = 5.0")
    line = reads_global.__code__.co_firstlineno + 2
    assert f"test_aliased_global_arguments.py:{line}" in text


def test_hand_formula_at_a_copy():
    # y = G * x; x[0] = 5; sum(y * x) = 5 G0 x0 + sum_{i>0} G_i x_i^2
    got = adgen.grad(reads_global)(G.copy())
    np.testing.assert_allclose(got, [5.0 * G0[0], *(2 * G0[1:] * G0[1:])])


@pytest.mark.parametrize("policy", POLICIES)
def test_closure_array(policy):
    fun, h = make_closure()
    _refused(lambda: adgen.grad(fun, mutation=policy)(h), "H", "argument 0 (x)")
    _copy_gives_central(fun, h)


@pytest.mark.parametrize("policy", POLICIES)
def test_attribute_of_a_global_object(policy):
    _refused(lambda: adgen.grad(reads_attribute, mutation=policy)(cfg.W), "cfg.W",
             "argument 0 (x)")
    _copy_gives_central(reads_attribute, cfg.W)


@pytest.mark.parametrize("policy", POLICIES)
def test_view_of_the_global(policy):
    _refused(lambda: adgen.grad(reads_tail, mutation=policy)(G[1:]), "G", "argument 0 (x)")
    _copy_gives_central(reads_tail, G0[1:])


@pytest.mark.parametrize("policy", POLICIES)
def test_function_writes_the_global_the_argument_is(policy):
    # the pullback of x * x reads x, which WORK[0] = 5.0 overwrites through the alias
    WORK[:] = G0
    _refused(lambda: adgen.grad(writes_global, mutation=policy)(WORK), "WORK",
             "WORK[0] = 5.0")
    _copy_gives_central(writes_global, G0)


@pytest.mark.parametrize("policy", POLICIES)
def test_value_and_grad(policy):
    _refused(lambda: adgen.value_and_grad(reads_global, mutation=policy)(G), "G",
             "argument 0 (x)")
    value, g = adgen.value_and_grad(reads_global, mutation=policy)(G.copy())
    np.testing.assert_allclose(g, numerical_grad(reads_global, (G0.copy(),), 0), rtol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_vjp_with_the_pullback_called_later(policy):
    _refused(lambda: adgen.vjp(reads_global, G, mutation=policy), "G", "argument 0 (x)")
    out, pull = adgen.vjp(reads_global, G.copy(), mutation=policy)
    (g,) = pull(1.0)
    np.testing.assert_allclose(g, numerical_grad(reads_global, (G0.copy(),), 0), rtol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_argnums_with_two_arguments(policy):
    c = np.array([0.5, -1.0, 2.0, 0.25])
    grad2 = adgen.grad(writes_second, argnums=(0, 1), mutation=policy)
    _refused(lambda: grad2(c, G), "G", "argument 1 (s)")
    gc, gs = grad2(c.copy(), G.copy())
    np.testing.assert_allclose(gc, numerical_grad(writes_second, (c, G0.copy()), 0), rtol=1e-6)
    np.testing.assert_allclose(gs, numerical_grad(writes_second, (c, G0.copy()), 1), rtol=1e-6)


def test_unwritten_argument_that_is_the_global_is_not_refused():
    # writes_second writes s, not c: c may be G (no false refusal)
    s = np.array([0.5, -1.0, 2.0, 0.25])
    got = adgen.grad(writes_second)(G, s.copy())
    np.testing.assert_allclose(got, numerical_grad(writes_second, (G0.copy(), s), 0),
                               rtol=1e-6)


def test_function_that_only_reads_the_global_takes_it():
    def no_write(x):
        return np.sum(np.sin(G * x))

    np.testing.assert_allclose(adgen.grad(no_write)(G),
                               numerical_grad(no_write, (G0.copy(),), 0), rtol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_repeated_calls_take_the_fast_path_and_still_refuse(policy):
    g = adgen.grad(reads_global, mutation=policy)
    expected = numerical_grad(reads_global, (G0.copy(),), 0)
    for _ in range(4):  # the second call of a signature writes its fast call
        np.testing.assert_allclose(g(G.copy()), expected, rtol=1e-6)
    _refused(lambda: g(G), "G", "argument 0 (x)")
    np.testing.assert_array_equal(G, G0)


@pytest.mark.parametrize("what", ["jacrev", "hessian"])
def test_jacobians_and_hessians(what):
    def vector(x):
        y = G * x
        x[0] = 5.0
        return y * x

    transform = adgen.jacrev(vector) if what == "jacrev" else adgen.hessian(reads_global)
    _refused(lambda: transform(G), "G", "argument 0 (x)")
    np.testing.assert_array_equal(G, G0)


def test_forward_mode_follows_the_alias():
    # jvp runs the tangent code in the program's order: G * x's tangent reads G before the
    # write, so it is right (and not refused) with G passed itself
    t = np.array([1.0, -0.5, 0.25, 2.0])
    expected = numerical_grad(reads_global, (G0.copy(),), 0) @ t  # (before G is written)
    out, tangent = adgen.jvp(reads_global, (G,), (t,))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    assert out == pytest.approx(5.0 * G0[0] + np.sum(G0[1:] ** 3))  # G * x read before


def test_numba_backend():
    pytest.importorskip("numba")
    g = adgen.grad(reads_global, backend="numba")
    expected = numerical_grad(reads_global, (G0.copy(),), 0)
    for _ in range(3):
        np.testing.assert_allclose(g(G.copy()), expected, rtol=1e-6)
    _refused(lambda: g(G), "G", "argument 0 (x)")
