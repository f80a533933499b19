"""Decorators as people write them: ``@functools.wraps(f) def wrapper(*args, **kwargs)``
around the differentiated function (timing, logging, validating, scaling). adgen
differentiates the wrapper as written, with the wrapped function's parameters; gradients
checked against central differences (this file's own checker), under both policies, in
forward mode, at second order, through a caller and on a method."""

import functools
import logging
import time

import numpy as np
import pytest

import adgen
from adgen.errors import UnsupportedError

log = logging.getLogger("adgen-test-wrappers")

W = np.array([0.3, -0.2, 0.5])
X = np.array([1.0, 2.0, -1.5])


def central(f, args, i, eps=1e-6):
    """The gradient of f in its i-th argument (a float array) by central differences."""
    x = np.array(args[i], dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        a = list(args)
        a[i] = up
        fu = f(*a)
        a[i] = down
        g[k] = (fu - f(*a)) / (2 * eps)
    return g


def timed(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        out = f(*args, **kwargs)
        wrapper.elapsed = time.perf_counter() - t0
        return out
    return wrapper


def logged(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        log.debug("calling %s", f.__name__)
        return f(*args, **kwargs)
    return wrapper


def doubled(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return 2.0 * f(*args, **kwargs)
    return wrapper


def checked(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        if args[0].ndim != 1:
            raise ValueError("w must be a vector")
        out = f(*args, **kwargs)
        return out + 0.5 * np.sum(args[0] ** 2)  # the decorator adds a penalty
    return wrapper


@timed
def timed_loss(w, x):
    return np.sum(np.tanh(w * x) ** 2)


@logged
def logged_loss(w, x, lam=0.1):
    return np.sum(np.sin(w) * x) + lam * np.sum(w ** 4)


@doubled
def doubled_loss(w, x, *, scale=1.5):
    return scale * np.sum(np.exp(0.3 * w) * x)


@checked
def checked_loss(w, x):
    return np.sum(np.cos(w * x))


@doubled
@logged
@timed
def stacked_loss(w, x):
    return np.sum(w * w * x)


def caller(w, x):
    return doubled_loss(w, x) + checked_loss(w * 2.0, x)


CASES = [
    (timed_loss, lambda w, x: np.sum(np.tanh(w * x) ** 2)),
    (logged_loss, lambda w, x: np.sum(np.sin(w) * x) + 0.1 * np.sum(w ** 4)),
    (doubled_loss, lambda w, x: 2.0 * 1.5 * np.sum(np.exp(0.3 * w) * x)),
    (checked_loss, lambda w, x: np.sum(np.cos(w * x)) + 0.5 * np.sum(w ** 2)),
    (stacked_loss, lambda w, x: 2.0 * np.sum(w * w * x)),
    (caller, None),
]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn,plain", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_of_the_wrapper_as_written(fn, plain, mutation):
    if plain is not None:
        assert np.isclose(fn(W, X), plain(W, X))  # the wrapper's own code counts
    g = adgen.grad(fn, mutation=mutation)(W, X)
    np.testing.assert_allclose(g, central(fn, (W, X), 0), rtol=1e-6, atol=1e-8)
    gx = adgen.grad(fn, argnums=1, mutation=mutation)(W, X)
    np.testing.assert_allclose(gx, central(fn, (W, X), 1), rtol=1e-6, atol=1e-8)


def test_the_wrapper_still_runs_its_own_code():
    timed_loss.__dict__.pop("elapsed", None)
    adgen.grad(timed_loss)(W, X)
    assert timed_loss.elapsed >= 0.0


def test_keywords_and_defaults_reach_the_wrapped_function():
    by_keyword = adgen.grad(logged_loss)(W, x=X, lam=0.7)
    np.testing.assert_allclose(by_keyword, central(lambda w, x: logged_loss(w, x, lam=0.7),
                                                   (W, X), 0), rtol=1e-6, atol=1e-8)
    g = adgen.grad(doubled_loss)(W, X, scale=-2.0)
    np.testing.assert_allclose(g, central(lambda w, x: doubled_loss(w, x, scale=-2.0),
                                          (W, X), 0), rtol=1e-6, atol=1e-8)


def test_value_and_grad_and_forward_mode():
    v, g = adgen.value_and_grad(doubled_loss)(W, X)
    assert np.isclose(v, doubled_loss(W, X))
    np.testing.assert_allclose(g, central(doubled_loss, (W, X), 0), rtol=1e-6, atol=1e-8)
    t = np.array([0.2, -1.0, 0.4])
    _, dout = adgen.jvp(checked_loss, (W, X), (t, np.zeros(3)))
    assert np.isclose(dout, central(checked_loss, (W, X), 0) @ t, rtol=1e-6)


def test_second_order_against_the_hand_hessian():
    # stacked_loss = 2 sum(w^2 x): the Hessian in w is diag(4 x)
    np.testing.assert_allclose(adgen.hessian(stacked_loss)(W, X), np.diag(4.0 * X),
                               rtol=1e-10)


class Model:
    def __init__(self):
        self.b = 0.25

    @doubled
    def loss(self, w, x):
        return np.sum((w * x - self.b) ** 2)


def test_a_decorated_method():
    m = Model()
    g = adgen.grad(m.loss)(W, X)
    np.testing.assert_allclose(g, central(m.loss, (W, X), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, 2.0 * 2.0 * (W * X - 0.25) * X, rtol=1e-10)


def test_a_lambda_and_a_script_style_closure():
    g = adgen.grad(lambda w: doubled_loss(w, X) * 3.0)(W)
    np.testing.assert_allclose(g, central(lambda w: doubled_loss(w, X) * 3.0, (W,), 0),
                               rtol=1e-6, atol=1e-8)


def test_wrapped_function_with_star_args_stays_a_precise_error():
    @doubled
    def star_loss(*ws):
        return sum(np.sum(w ** 2) for w in ws)

    with pytest.raises(UnsupportedError,
                       match=r"test_star_wrappers\.py.*wrapper.*star_loss.*takes \*args"):
        adgen.grad(star_loss)(W)


def test_a_parameter_named_like_a_name_the_wrapper_uses_is_a_precise_error():
    @doubled
    def clash(f, x):
        return np.sum(f * x)

    with pytest.raises(UnsupportedError, match=r"'f' is also a name the wrapper uses"):
        adgen.grad(clash)(W, X)


@logged
def writes_its_argument(w, buf):
    buf[0] = w[0] * w[1]  # a scratch buffer the caller passes in
    buf[1:] = np.sin(w[1:])
    return np.sum(buf ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_wrapped_function_that_writes_its_arguments(mutation):
    # f(*args, **kwargs) with args as given is the plain call f(w, buf), which adgen follows
    # (a starred call of a function writing its arguments is refused)
    def f(w):
        return writes_its_argument(w, np.zeros(3)) * 1.0

    g = adgen.grad(f, mutation=mutation)(W)
    np.testing.assert_allclose(g, central(f, (W,), 0), rtol=1e-6, atol=1e-8)
    buf = np.zeros(3)
    adgen.grad(writes_its_argument, mutation=mutation)(W, buf)
    np.testing.assert_allclose(buf, [W[0] * W[1], np.sin(W[1]), np.sin(W[2])])


def method_logged(f):
    @functools.wraps(f)
    def wrapper(self, *args, **kwargs):
        return f(self, *args, **kwargs) * self.gain
    return wrapper


class Regressor:
    def __init__(self, w):
        self.w = w
        self.gain = 0.5

    @method_logged
    def loss(self, x, y):
        return np.sum((self.w * x - y) ** 2)


def test_a_method_wrapper_with_self_before_star_args():
    y = np.array([0.1, 0.0, -0.3])
    r = Regressor(W.copy())
    g = adgen.grad(r.loss)(X, y)
    np.testing.assert_allclose(g, central(lambda x: Regressor(W.copy()).loss(x, y), (X,), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, 0.5 * 2 * (W * X - y) * W, rtol=1e-10)

    def by_w(w):
        return Regressor(w).loss(X, y)

    np.testing.assert_allclose(adgen.grad(by_w)(W), central(by_w, (W,), 0), rtol=1e-6,
                               atol=1e-8)


def test_a_wrapper_with_a_default_of_its_own_stays_a_precise_error():
    def with_default(f):
        @functools.wraps(f)
        def wrapper(scale=2.0, *args, **kwargs):
            return scale * f(*args, **kwargs)
        return wrapper

    @with_default
    def g(w):
        return np.sum(w)

    with pytest.raises(UnsupportedError, match=r"test_star_wrappers\.py.*wrapper a decorator"):
        adgen.grad(g)(W)


def test_a_wrapper_reading_how_it_was_called_is_a_precise_error():
    # kwargs.get / len(args) depend on how the caller passed the arguments, which adgen's
    # wrapper (every argument positional, defaults filled in) does not know
    def hyper(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            scale = kwargs.get("lam", 1.0)
            return f(*args) * scale
        return wrapper

    def counted(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs) * len(args)
        return wrapper

    @hyper
    def a(w, x, lam=0.1):
        return np.sum(w * x)

    @counted
    def b(w, x):
        return np.sum(w * x)

    with pytest.raises(UnsupportedError, match=r"wrapper a decorator put around a, reads "
                                               r"kwargs itself"):
        adgen.grad(a)(W, X, lam=3.0)
    with pytest.raises(UnsupportedError, match=r"put around b, reads args itself"):
        adgen.grad(b)(W, X)
