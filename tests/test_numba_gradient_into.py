"""grad's one compiled call on the numba backend writes the gradients of float64 array
arguments into arrays adgen.grad allocates (transforms/numba_gradient.py): an adjoint the
pullback allocates for an argument (``L_bar = zeros_like(L)``) is made in that array
(``zeros_into``), any other cotangent is copied into it when the pullback returns
(``store_cotangent``). Checked against central differences and hand formulas, with fresh
arrays at every call, non-contiguous and int arguments, globals passed as data, and
arguments the output does not depend on. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

SCALE = 0.5  # a float global: passed to the compiled forward at each call
WEIGHTS = np.array([1.0, 2.0, 3.0])  # an array global, likewise


def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc = acc - L[i, j] * x[j]
        x[i] = acc / L[i, i]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


def scaled_in_place(x, w):
    for i in range(x.shape[0]):  # x's adjoint goes through its shadow: not zeros_like(x)
        x[i] = x[i] * w
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def ignores_second(x, unused):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i])
    return s


def weighted(x, idx):
    s = 0.0
    for k in range(idx.shape[0]):
        s += SCALE * WEIGHTS[k] * x[idx[k]] ** 2
    return s


def _system(n, seed):
    rng = np.random.default_rng(seed)
    return np.tril(rng.random((n, n))) + 3.0 * np.eye(n), rng.random(n)


def test_an_adjoint_allocated_for_an_argument_is_made_in_the_gradient_array():
    L, b = _system(7, 0)
    text = adgen.source(forward_substitution, L, b, backend="numba")
    assert "L_bar = zeros_into(L_grad, L)" in text
    assert "def forward_substitution_gradient(L, b, L_grad, b_grad):" in text
    g = adgen.grad(forward_substitution, argnums=(0, 1), backend="numba")
    gL, gb = g(L, b)
    assert_grad_close(gL, numerical_grad(forward_substitution, (L, b), 0))
    assert_grad_close(gb, numerical_grad(forward_substitution, (L, b), 1))
    # the hand gradient: s = |x|^2 with L x = b gives db = 2 L^-T x, dL = -tril(db x^T)
    x = np.linalg.solve(L, b)
    db = np.linalg.solve(L.T, 2.0 * x)
    assert_grad_close(gb, db, rtol=1e-12)
    assert_grad_close(gL, -np.tril(np.outer(db, x)), rtol=1e-12, atol=1e-14)
    assert np.all(np.triu(gL, 1) == 0.0)  # zeroed, not left as np.empty made it
    assert gL.dtype is np.dtype(np.float64) and gL.flags.c_contiguous


def test_each_call_gets_new_gradient_arrays():
    L, b = _system(5, 1)
    g = adgen.grad(forward_substitution, argnums=(0, 1), backend="numba")
    first = g(L, b)
    kept = [a.copy() for a in first]
    first[0][...] = 7.0  # the caller owns what it got: changing it changes no later call
    second = g(L, b)
    assert second[0] is not first[0] and second[1] is not first[1]
    for a, k in zip(second, kept):
        assert_grad_close(a, k, rtol=0, atol=0)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_a_cotangent_not_allocated_for_its_argument_is_copied_in(policy):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(6)
    text = adgen.source(scaled_in_place, x.copy(), 0.7, backend="numba", mutation=policy)
    assert "store_cotangent(x_grad" in text
    gx, gw = adgen.grad(scaled_in_place, argnums=(0, 1), backend="numba",
                        mutation=policy)(x.copy(), 0.7)
    # s = sum((w x)^2): ds/dx = 2 w^2 x, ds/dw = 2 w sum(x^2)
    assert_grad_close(gx, 2.0 * 0.49 * x, rtol=1e-12)
    assert gw == pytest.approx(2.0 * 0.7 * np.sum(x * x), rel=1e-12)
    assert_grad_close(gx, numerical_grad(scaled_in_place, (x.copy(), 0.7), 0))


def test_an_argument_the_output_does_not_depend_on_gets_zeros():
    rng = np.random.default_rng(3)
    x, unused = rng.standard_normal(5), rng.standard_normal((2, 3))
    gx, gu = adgen.grad(ignores_second, argnums=(0, 1), backend="numba")(x, unused)
    assert_grad_close(gx, np.cos(x), rtol=1e-12)
    assert gu.shape == (2, 3) and np.all(gu == 0.0)
    expected = adgen.grad(ignores_second, argnums=(0, 1))(x, unused)
    assert_grad_close(gu, expected[1], rtol=0, atol=0)


def test_views_int_arrays_and_globals_as_data():
    rng = np.random.default_rng(4)
    base = rng.standard_normal(12)
    x = base[::2]  # not contiguous: numba compiles for its layout, the gradient is C order
    idx = np.array([4, 0, 2])
    g = adgen.grad(weighted, backend="numba")(x, idx)
    expected = np.zeros(6)
    for k, i in enumerate(idx):
        expected[i] += 2.0 * SCALE * WEIGHTS[k] * x[i]
    assert_grad_close(g, expected, rtol=1e-12)
    assert_grad_close(g, numerical_grad(weighted, (x.copy(), idx), 0))


def test_value_and_grad_and_a_lambda():
    L, b = _system(4, 5)
    value, gb = adgen.value_and_grad(forward_substitution, argnums=1, backend="numba")(L, b)
    assert value == pytest.approx(forward_substitution(L, b), rel=1e-14)
    assert_grad_close(gb, numerical_grad(forward_substitution, (L, b), 1))
    g = adgen.grad(lambda v: ignores_second(2.0 * v, v), backend="numba")(b)
    assert_grad_close(g, 2.0 * np.cos(2.0 * b), rtol=1e-12)


def repeated_layer(W, x):
    s = 0.0
    for _ in range(3):
        h = np.tanh(W @ x)  # W's adjoint accumulates across iterations: W_bar += ...
        s += np.sum(h * h)
        x = 0.5 * x + h
    return s


def test_an_adjoint_accumulated_in_place_is_made_in_the_gradient_array():
    rng = np.random.default_rng(6)
    W, x = 0.4 * rng.standard_normal((4, 4)), rng.standard_normal(4)
    text = adgen.source(repeated_layer, W, x, backend="numba")
    into = text[text.index("def repeated_layer_pullback_into"):]
    assert "W_bar = zeros_into(W_grad, W)" in into and "W_bar +=" in into
    gW, gx = adgen.grad(repeated_layer, argnums=(0, 1), backend="numba")(W, x)
    assert_grad_close(gW, numerical_grad(repeated_layer, (W, x), 0))
    assert_grad_close(gx, numerical_grad(repeated_layer, (W, x), 1))


def diffuse(u0, alpha):
    u = u0.copy()
    for _ in range(6):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]  # an array recorded per step: a typed list
        u[1:-1] += alpha * lap
    return np.sum(u * u)  # the pipeline writes it (u * u).sum(): a method of an expression


def test_a_reduction_method_of_an_expression_gets_the_gradient_function():
    """The output (u * u).sum() is typed as a float, so grad runs the one compiled call:
    without it, grad ran the forward and the pullback apart, boxing the recorded arrays'
    typed list between them (the heat equation 114 -> 176 us from session 9 to 10)."""
    rng = np.random.default_rng(8)
    u0 = rng.standard_normal(9)
    text = adgen.source(diffuse, u0, 0.2, backend="numba")
    assert "(u * u).sum()" in text
    assert "def diffuse_gradient(u0, alpha, u0_grad):" in text
    for policy in ("save", "strict"):
        gu, ga = adgen.grad(diffuse, argnums=(0, 1), backend="numba",
                            mutation=policy)(u0, 0.2)
        assert_grad_close(gu, numerical_grad(diffuse, (u0, 0.2), 0))
        assert ga == pytest.approx(numerical_grad(diffuse, (u0, 0.2), 1), rel=1e-6)
    value, gu = adgen.value_and_grad(diffuse, backend="numba")(u0, 0.3)
    assert value == pytest.approx(diffuse(u0, 0.3), rel=1e-14)
    assert_grad_close(gu, numerical_grad(diffuse, (u0, 0.3), 0))


def half_logdet(A, v):
    L = np.linalg.cholesky(A)
    return np.log(np.diag(L)).sum() + v @ np.diag(np.diag(L)) @ v  # a vector, a matrix


def test_a_diagonal_is_typed_and_the_output_gets_the_gradient_function():
    """np.diag of a matrix (a vector) and of a vector (a matrix) are typed, so the output
    is known to be a float and grad runs the one compiled call (the suite's gp-nll had no
    gradient function)."""
    rng = np.random.default_rng(9)
    M = rng.standard_normal((4, 4))
    A = M @ M.T + 4.0 * np.eye(4)
    v = rng.standard_normal(4)
    text = adgen.source(half_logdet, A, v, backend="numba")
    assert "def half_logdet_gradient(A, v, A_grad, v_grad):" in text
    gA, gv = adgen.grad(half_logdet, argnums=(0, 1), backend="numba")(A, v)
    assert_grad_close(gA, numerical_grad(half_logdet, (A, v), 0))
    assert_grad_close(gv, 2.0 * np.diag(np.linalg.cholesky(A)) * v, rtol=1e-12)
    assert_grad_close(gA, adgen.grad(half_logdet)(A, v), rtol=1e-12)


def test_every_benchmarked_workload_has_its_gradient_function():
    """Each workload of bench/experiments/numba_backend.py returns a float, and its module
    has the gradient function grad runs as one compiled call: a form of output the rewrite's
    type analysis does not type sends grad through the forward and the pullback apart, about
    1.5 times slower on the heat equation (session 10's (u * u).sum()), without failing
    anything else. Only the rewrite runs here (adgen.source), not numba's compiler."""
    from bench.experiments.numba_backend import WORKLOADS

    missing = []
    for name, case in WORKLOADS.items():
        f, args, _, _ = case()
        assert isinstance(f(*args), float), name
        if f"def {f.__name__}_gradient(" not in adgen.source(f, *args, backend="numba"):
            missing.append(name)
    assert not missing, f"no gradient function: {missing}"
