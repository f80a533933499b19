"""The Python a NumPy user writes around a loss (issue 13): lambdas (the JAX idiom), callable
objects, max/min of several arguments, a helper that builds a mask with np.triu_indices,
functions typed where Python keeps no source. Gradients against hand-derived formulas or
central differences."""

import functools
import subprocess
import sys

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

X = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
Y = np.array([1.0, 0.0, 2.0])
W0 = np.array([0.3, -0.2])


def loss(w, X, y):
    return np.sum((X @ w - y) ** 2)


def test_grad_of_a_lambda_closing_over_data():
    expected = 2 * X.T @ (X @ W0 - Y)
    assert_grad_close(adgen.grad(lambda w: loss(w, X, Y))(W0), expected)
    value, g = adgen.value_and_grad(
        lambda w: loss(w,
                       X, Y))(W0)  # a lambda inside a call, over several lines
    assert value == pytest.approx(loss(W0, X, Y))
    assert_grad_close(g, expected)


def test_two_lambdas_on_one_line_are_told_apart():
    square, cube = (lambda v: np.sum(v ** 2)), (lambda v: np.sum(v ** 3))
    assert_grad_close(adgen.grad(cube)(W0), 3 * W0 ** 2)
    assert_grad_close(adgen.grad(square)(W0), 2 * W0)


def test_lambda_in_a_loop_sees_each_iteration_s_values():
    for scale in (1.0, 3.0):
        assert_grad_close(adgen.grad(lambda w: scale * np.sum(np.sin(w)))(W0),
                          scale * np.cos(W0))


def _with_one_argument_varied(argnum, args):
    # the helper a test harness writes: a comprehension in the lambda reads argnum, a
    # parameter of the function around it (the comprehension's closure holds its cell)
    return lambda z: loss(*[z if i == argnum else a for i, a in enumerate(args)])


def test_a_lambda_whose_comprehension_reads_the_enclosing_function_s_parameter():
    f = _with_one_argument_varied(0, (W0, X, Y))
    expected = 2 * X.T @ (X @ W0 - Y)
    assert_grad_close(adgen.grad(f)(W0), expected)
    v = np.array([0.5, -1.5])
    _, t = adgen.jvp(f, (W0,), (v,))
    assert t == pytest.approx(expected @ v)


class Dense:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.sum(np.tanh(x @ self.w))


def test_callable_object():
    layer = Dense(np.array([[0.5], [-1.0]]))
    x = np.array([[1.0, 2.0], [0.3, 0.1]])
    assert_grad_close(adgen.grad(layer)(x), numerical_grad(layer, [x], 0))
    out, pullback = adgen.vjp(layer, x)
    assert out == pytest.approx(layer(x))
    assert_grad_close(pullback(1.0)[0], numerical_grad(layer, [x], 0))


def max_min(a, b, c):
    return max(a, b, c) * min(a, b, c) + max(a, 0.5 * b, c, 2.0)


def test_max_and_min_of_three_or_more_arguments():
    # max = b, min = a; the second max is c: d/da = b, d/db = a, d/dc = 1
    got = adgen.grad(max_min, argnums=(0, 1, 2))(1.0, 3.0, 2.5)
    assert got == pytest.approx((3.0, 1.0, 1.0))


def extremes_of_iterables(x):
    best = max(x[3:])  # an array's items
    worst = min([x[0], x[1], x[2]])  # a list
    return best * 2.0 + worst * worst + min(tuple(x[:2])) + max(list(x)) ** 2


def test_max_and_min_of_one_iterable():
    x = np.array([0.5, 0.2, 0.9, 0.1, 0.7, 0.3])
    g = adgen.grad(extremes_of_iterables)(x)
    # by hand: max(x[3:]) = x4, min of x0..x2 = x1 (squared), min(x0, x1) = x1, max(x) = x2
    np.testing.assert_allclose(g, [0.0, 2 * 0.2 + 1.0, 2 * 0.9, 0.0, 2.0, 0.0], rtol=1e-12)
    v = np.linspace(0.1, 0.6, 6)
    assert adgen.jvp(extremes_of_iterables, (x,), (v,))[1] == pytest.approx(np.dot(g, v))


def upper_sq(x):
    n = x.shape[0]
    i, j = np.triu_indices(n, 1)
    return np.sum(x[i, j] ** 2)


def test_a_mask_built_with_triu_indices():
    x = np.arange(9.0).reshape(3, 3)
    assert_grad_close(adgen.grad(upper_sq)(x), 2 * np.triu(x, 1))


def test_function_typed_with_python_c_names_the_cause():
    code = ("import numpy as np, adgen\n"
            "def f(x):\n    return np.sum(x * x)\n"
            "try:\n    adgen.grad(f)(np.ones(2))\n"
            "except adgen.MissingRuleError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=True)
    assert "interactive prompt, by python -c or by exec" in r.stdout
    assert "define it in a .py file" in r.stdout


def nested_iteration(xs, ws):
    total = 0.0
    for i, (a, b) in enumerate(zip(xs, ws)):
        total = total + i * a * b
    for k, (a, (b, c)) in enumerate(zip(xs, zip(ws, xs)), start=1):
        total = total + k * a * b * c
    for a, b, c in zip(xs, ws, xs[::-1]):
        total = total + a * b * c
    return total


def test_enumerate_and_zip_nested():
    xs, ws = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    got = adgen.grad(nested_iteration, argnums=(0, 1))(xs, ws)
    assert_grad_close(got[0], numerical_grad(nested_iteration, [xs, ws], 0))
    assert_grad_close(got[1], numerical_grad(nested_iteration, [xs, ws], 1))


def _rhs(y, k, c=0.1):
    return np.array([y[1], -k * y[0] - c * y[1]])


_STEP = functools.partial(_rhs, k=2.0)


def _uses_a_global_partial(y):
    return np.sum(_STEP(y) ** 2)


def _uses_a_local_partial(y, k):
    step = functools.partial(_rhs, k=k, c=0.3)
    return np.sum(step(y) ** 2)


def _loss(w, X, y, scale=1.0):
    return scale * np.sum((X @ w - y) ** 2)


def test_functools_partial():
    rng = np.random.default_rng(2)
    X, t, w = rng.random((5, 3)), rng.random(5), rng.random(3)
    # the differentiated function itself (JAX's idiom), its argnums counting the call's own
    p = functools.partial(_loss, X=X, y=t, scale=2.0)
    assert_grad_close(adgen.grad(p)(w), numerical_grad(p, [w], 0))
    out, pull = adgen.vjp(p, w)
    assert_grad_close(pull(1.0)[0], numerical_grad(p, [w], 0))
    v = rng.random(3)
    assert adgen.jvp(p, (w,), (v,))[1] == pytest.approx(np.dot(adgen.grad(p)(w), v))
    # called inside: a global partial, and a local one binding values without a gradient
    y = np.array([0.4, -0.3])
    assert_grad_close(adgen.grad(_uses_a_global_partial)(y),
                      numerical_grad(_uses_a_global_partial, [y], 0))
    assert_grad_close(adgen.grad(_uses_a_local_partial)(y, 2.0),
                      numerical_grad(_uses_a_local_partial, [y, 2.0], 0))
    # a local partial binding a value with a gradient: refused, not dropped
    with pytest.raises(adgen.UnsupportedError, match="functools.partial binds k"):
        adgen.grad(_uses_a_local_partial, argnums=1)(y, 2.0)


def _compressed(x):
    return np.sum(x.compress([True, False, True, True]) ** 2) + np.sum(
        x.reshape(2, 2).compress([False, True], axis=0))


def test_compress_method():
    x = np.array([0.5, -1.0, 2.0, 0.25])
    # by hand: 2 x where kept by the mask, plus 1 for the second row
    np.testing.assert_allclose(adgen.grad(_compressed)(x), [1.0, 0.0, 5.0, 1.5])


def _norm2(*xs):
    return sum(np.sum(v ** 2) for v in xs)


def _scaled(scale, *xs):
    out = 0.0
    for v in xs:
        out = out + scale * np.sum(np.sin(v))
    return out


def _pairs(*xs):
    return xs[0] * xs[1], len(xs)


def _uses_star_helpers(x):
    g = _scaled  # called through a variable too
    p, n = _pairs(x, x + 1.0)
    return _norm2(x, 2.0 * x, x[:2]) + _scaled(0.5, x, x * x) + g(2.0, x[1:]) + np.sum(p) * n


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_helpers_taking_star_args(mutation):
    x = np.array([0.3, -0.5, 0.8])
    assert_grad_close(adgen.grad(_uses_star_helpers, mutation=mutation)(x.copy()),
                      numerical_grad(_uses_star_helpers, [x], 0))


def _star_forward(x):
    return _norm2(x, 2.0 * x, x[:2]) + _scaled(0.5, x, x * x)


def test_star_args_in_forward_mode_and_at_the_top():
    x, v = np.array([0.3, -0.5, 0.8]), np.array([1.0, 0.5, -0.2])
    assert adgen.jvp(_star_forward, (x,), (v,))[1] == pytest.approx(
        np.dot(adgen.grad(_star_forward)(x), v))
    # the differentiated function itself with *args: refused, with what to write instead
    with pytest.raises(adgen.UnsupportedError, match=r"\*args"):
        adgen.grad(_norm2)(x, x)


def mlp_with_lambdas(w, x):
    relu = lambda z: np.maximum(z, 0.0)             # noqa: E731 (as people write it)
    scale = lambda v, p=2.0: p * v                  # noqa: E731
    h = relu(x @ w)
    out = scale(h) + (lambda t: np.sin(t))(h)       # called where it stands
    return np.sum(out ** 2)


def lambdas_in_a_loop(x):
    fns = []
    for k in range(3):
        fns.append(lambda v: v * k)                 # late binding: every one sees k = 2
    total = 0.0
    for fn in fns:
        total = total + np.sum(fn(x) ** 2)
    return total


def lambda_inside_lambda(x):
    compose = lambda f, g: (lambda v: f(g(v)))      # noqa: E731
    h = compose(np.sin, lambda v: v * 3.0)
    return np.sum(h(x))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_lambdas_inside_the_function(mutation):
    w = np.array([[0.5, -0.3], [0.2, 0.8]])
    x = np.array([[1.0, 2.0], [-0.5, 0.3], [0.7, 0.1]])
    for k in (0, 1):
        assert_grad_close(adgen.grad(mlp_with_lambdas, k, mutation=mutation)(w, x),
                          numerical_grad(mlp_with_lambdas, (w, x), k))
    v = np.array([0.3, -0.4, 1.2])
    for fn in (lambdas_in_a_loop, lambda_inside_lambda):
        assert_grad_close(adgen.grad(fn, mutation=mutation)(v), numerical_grad(fn, (v,), 0))
    assert adgen.grad(lambdas_in_a_loop)(v) == pytest.approx(3 * 2 * 2 * 2 * v)


def lambda_reading_a_comprehension_variable(x):
    return sum(np.sum((lambda v: v * k)(x)) for k in range(3))


def test_lambda_reading_a_comprehension_variable_is_refused():
    with pytest.raises(adgen.UnsupportedError, match="reads its variable k") as info:
        adgen.grad(lambda_reading_a_comprehension_variable)(np.ones(3))
    assert "(lambda v: v * k)(x)" in info.value.location.source_line
