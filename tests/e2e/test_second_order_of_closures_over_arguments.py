"""Second derivatives of a function whose nested def (or lambda) closes over the
differentiated argument and is called on another argument, as people write a local helper:

    def loss(x, y):
        def inner(v):
            return np.log(v) * x
        return np.sum(inner(y)) + np.sum(x ** 3)

``hessian(loss)`` in ``x`` gave NaN where ``y`` holds a 0, in entries that are finite (the
``x ** 3`` term's 3.0 too), where ``jax.hessian`` gives the finite Hessian: the jvp of the
nested def was compiled with a tangent for every parameter, and the call passed ``y`` a zero
tangent (the call of a nested def was taken to change its arguments, so ``y`` varied with
``x``), and ``log``'s tangent ``0 / 0`` at ``y = 0`` reached every entry. docs/forward-and-
higher-order.md listed it as a limitation ("define the helper at module level"). Now the
nested def's jvp is compiled for the arguments a call gives a tangent, and one that changes
none of its arguments leaves them constants, as a module-level helper does.

Checked against a hand formula at ``y = 0`` (central differences of ``loss`` are -inf there),
central differences of the gradient elsewhere, and ``jax.hessian`` where jax is installed.
"""

import numpy as np
import pytest
from gradcheck import numerical_hessian

import adgen

X = np.array([0.5, -1.0, 2.0])
Y_ZERO = np.array([0.0, 1.0, 2.0])
Y = np.array([0.5, 1.0, 2.0])
V = np.array([1.0, 0.3, -0.2])


def closure(x, y):
    def inner(v):
        return np.log(v) * x
    return np.sum(inner(y)) + np.sum(x ** 3)


def closure_by_keyword(x, y):
    def inner(v, scale=2.0):
        return np.log(v) * x * scale
    return np.sum(inner(v=y)) + np.sum(x ** 3)


def lambda_closure(x, y):
    g = lambda v: np.log(v) * np.sin(x)  # noqa: E731 - the user's way to write it
    return np.sum(g(y)) + np.sum(x ** 3)


def called_twice(x, y):
    def inner(v):
        return np.log(v) * x
    return np.sum(inner(y)) + np.sum(inner(x * x + 1.0))


def writes_its_argument(x, y):
    # a nested def changing its argument in place: y then varies with x (left as it was)
    def scale_into(v, w):
        for i in range(v.shape[0]):
            v[i] = v[i] * w[i]
        return v
    z = scale_into(y.copy(), x)
    return np.sum(z ** 2) + np.sum(x ** 3)


def _hand(f, x, y):
    """The Hessian in x, by hand."""
    if f is closure or f is closure_by_keyword:
        return np.diag(6 * x)
    if f is lambda_closure:  # d2/dx2 of log(y) sin(x) is -log(y) sin(x): finite only at y > 0
        return np.diag(6 * x - np.log(y) * np.sin(x))
    if f is called_twice:
        return np.diag(2 * (2 * x / (x * x + 1.0)) + x * (
            2 / (x * x + 1.0) - 4 * x * x / (x * x + 1.0) ** 2))
    if f is writes_its_argument:
        return np.diag(2 * y ** 2 + 6 * x)
    raise AssertionError(f)


SPELLINGS = {
    "hessian": lambda f, m: adgen.hessian(f, mutation=m),
    "jacfwd(grad)": lambda f, m: adgen.jacfwd(adgen.grad(f, mutation=m)),
    "jacrev(grad)": lambda f, m: adgen.jacrev(adgen.grad(f, mutation=m)),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("f", [closure, closure_by_keyword, called_twice],
                         ids=lambda f: f.__name__)
def test_finite_where_the_other_argument_holds_a_zero(f, spelling, mutation):
    with np.errstate(divide="ignore", invalid="ignore"):
        H = SPELLINGS[spelling](f, mutation)(X, Y_ZERO)
    assert np.all(np.isfinite(H)), H
    assert np.allclose(H, _hand(f, X, Y_ZERO))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_hvp_where_the_other_argument_holds_a_zero(mutation):
    with np.errstate(divide="ignore", invalid="ignore"):
        hv = adgen.hvp(closure, mutation=mutation)(X, Y_ZERO, V)
    assert np.allclose(hv, np.diag(6 * X) @ V)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("f", [closure, closure_by_keyword, lambda_closure, called_twice,
                               writes_its_argument], ids=lambda f: f.__name__)
def test_against_differences_at_a_regular_point(f, spelling, mutation):
    H = SPELLINGS[spelling](f, mutation)(X, Y)
    assert np.allclose(H, _hand(f, X, Y))
    assert np.allclose(H, numerical_hessian(lambda x: f(x, Y), X), atol=1e-5)


def test_the_other_argument_still_has_its_derivatives():
    # the Hessian in y of the same closures: y is differentiated, so its tangent flows
    H = adgen.hessian(closure, argnums=1)(X, Y)
    assert np.allclose(H, np.diag(-X / Y ** 2))
    H = adgen.hessian(writes_its_argument, argnums=1)(X, Y)
    assert np.allclose(H, np.diag(2 * X ** 2))
    blocks = adgen.hessian(closure, argnums=(0, 1))(X, Y)
    assert np.allclose(blocks[0][1], np.diag(1 / Y))


def test_as_jax_gives_it():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def closure_j(x, y):
        def inner(v):
            return jnp.log(v) * x
        return jnp.sum(inner(y)) + jnp.sum(x ** 3)

    with np.errstate(divide="ignore", invalid="ignore"):
        for y in (Y_ZERO, Y):
            assert np.allclose(adgen.hessian(closure)(X, y),
                               np.asarray(jax.hessian(closure_j)(X, y)))


DATA = np.array([0.0, 1.0, 2.0])


def reads_data(x, data):
    # the nested def reads data (no direction: a constant) and x, and is called on x
    def term(v):
        return np.sqrt(data) * v ** 3
    return np.sum(term(x))


def passes_data(x, data):
    def term(v, d):
        return np.sqrt(d) * v ** 3
    return np.sum(term(x, data))


@pytest.mark.parametrize("spelling", ["jacfwd(jacfwd)", "jacfwd(jacrev)", "jacrev(jacfwd)",
                                      "hessian", "jacrev(grad)"])
@pytest.mark.parametrize("f", [reads_data, passes_data], ids=lambda f: f.__name__)
def test_forward_over_forward_with_a_constant_holding_a_zero(f, spelling):
    # jacfwd(jacfwd(f)) differentiates f's jvp code, which holds the nested def: a call of
    # the jvp code was taken to change its arguments (a function with a nested def was taken
    # to write them), so data got a zero tangent, sqrt(data)'s 0 / 0 at 0: all NaN
    outer, _, inner = spelling.partition("(")
    make = {"jacfwd": adgen.jacfwd, "jacrev": adgen.jacrev, "grad": adgen.grad,
            "hessian": adgen.hessian}
    d = make[outer](f) if not inner else make[outer](make[inner.rstrip(")")](f))
    with np.errstate(divide="ignore", invalid="ignore"):
        H = d(X, DATA)
    assert np.allclose(H, np.diag(6 * np.sqrt(DATA) * X)), H


@pytest.mark.parametrize("spelling", ["jacfwd(hessian)", "jacrev(hessian)",
                                      "jacfwd(jacfwd(grad))"])
def test_third_derivatives_with_a_constant_holding_a_zero(spelling):
    third = {"jacfwd(hessian)": lambda f: adgen.jacfwd(adgen.hessian(f)),
             "jacrev(hessian)": lambda f: adgen.jacrev(adgen.hessian(f)),
             "jacfwd(jacfwd(grad))": lambda f: adgen.jacfwd(adgen.jacfwd(adgen.grad(f)))}
    with np.errstate(divide="ignore", invalid="ignore"):
        T = third[spelling](reads_data)(X, DATA)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 6 * np.sqrt(DATA[i])
    assert np.allclose(T, expected), T
