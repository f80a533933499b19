"""Forward mode and Jacobians called as a JAX user calls them: jvp(..., has_aux=True),
hessian with a tuple of argnums, Jacobians of a function returning a tuple of outputs."""
import numpy as np
import pytest

import adgen


def loss(x, w):
    y = np.sin(w * x) * x
    return np.sum(y ** 2), {"y": y, "tag": "fit", "n": 3}


def energy(x, w):
    return loss(x, w)[0]


def pair(x):
    return np.sum(x), x * 2.0


X, W = np.array([0.3, -0.7, 1.1]), 0.8


def test_jvp_has_aux():
    v, eps = np.array([1.0, -0.5, 0.25]), 1e-6
    out, slope, aux = adgen.jvp(loss, (X, W), (v, 0.5), has_aux=True)
    assert np.isclose(out, energy(X, W)) and aux["tag"] == "fit" and aux["n"] == 3
    assert np.allclose(aux["y"], np.sin(W * X) * X)
    fd = (energy(X + eps * v, W + 0.5 * eps) - energy(X - eps * v, W - 0.5 * eps)) / (2 * eps)
    assert np.isclose(slope, fd, rtol=1e-7)
    jitted = adgen.jvp(lambda x: (np.sum(x ** 3), x.shape), (X,), (v,), has_aux=True)
    assert jitted[2] == (3,) and np.isclose(jitted[1], np.sum(3 * X ** 2 * v))


def test_jvp_has_aux_needs_a_pair():
    with pytest.raises(adgen.NonDifferentiableError, match="pair"):
        adgen.jvp(energy, (X, W), (np.ones(3), 0.0), has_aux=True)


def test_hessian_takes_a_tuple_of_argnums_as_jax():
    # the blocks (it was refused, naming jacfwd(grad(f, argnums=j), argnums=k) for them):
    # ((H_xx, H_xw), (H_wx, H_ww)), against central differences of the gradients
    (hxx, hxw), (hwx, hww) = adgen.hessian(energy, argnums=(0, 1))(X, W)
    gx, gw, eps = adgen.grad(energy), adgen.grad(energy, argnums=1), 1e-6
    assert hxw.shape == (3,) and hwx.shape == (3,) and np.shape(hww) == ()
    assert np.allclose(hxw, (gx(X, W + eps) - gx(X, W - eps)) / (2 * eps), rtol=1e-6)
    assert np.allclose(hwx, hxw, rtol=1e-9)
    assert np.allclose(hxx, adgen.hessian(energy)(X, W), rtol=1e-12)
    assert np.isclose(hww, (gw(X, W + eps) - gw(X, W - eps)) / (2 * eps), rtol=1e-6)
    # the off-diagonal block by JAX's other idiom
    block = adgen.jacfwd(adgen.grad(energy, argnums=0), argnums=1)(X, W)
    assert np.allclose(block, hxw, rtol=1e-9)


@pytest.mark.parametrize("jac", [adgen.jacfwd, adgen.jacrev, adgen.jacobian])
def test_jacobian_of_a_tuple_output_gives_a_tuple(jac):
    # as jax.jacfwd: one Jacobian per output (refused by name until session 17)
    J = jac(pair)(X)
    assert isinstance(J, tuple) and len(J) == 2
    assert np.allclose(J[0], np.ones(3)) and np.allclose(J[1], 2.0 * np.eye(3))


@pytest.mark.parametrize("jac", [adgen.jacfwd, adgen.jacobian])
def test_jacobian_of_a_list_of_numbers_still_stacks(jac):
    J = jac(lambda x: [np.sum(x ** 2), x[0] * x[1]])(X)
    assert np.allclose(J, [2 * X, [X[1], X[0], 0.0]])


def test_jacrev_of_a_list_of_numbers_is_refused_by_name():
    # (its pullback takes one cotangent per item: it was a CotangentError about a cotangent
    # the user never gave)
    with pytest.raises(adgen.NonDifferentiableError, match="returned a list"):
        adgen.jacrev(lambda x: [np.sum(x ** 2), x[0] * x[1]])(X)


@pytest.mark.parametrize("outer", [adgen.grad, lambda f: (lambda x: adgen.jvp(f, (x,), (X,)))])
def test_a_jvp_inside_a_differentiated_function_names_the_way(outer):
    # a user building an hvp by hand: grad of x -> jvp(f, x, v)[1]; it was 'adgen.jvp() has
    # no derivative rule ... register one with adgen.rrule'
    def slope(x):
        return adgen.jvp(lambda z: energy(z, W), (x,), (np.ones(3),))[1]

    with pytest.raises(adgen.MissingRuleError, match="adgen.hvp"):
        outer(slope)(X)
    g, v, eps = adgen.grad(energy), np.ones(3), 1e-6   # what to write instead
    assert np.allclose(adgen.hvp(lambda z: energy(z, W))(X, v),
                       (g(X + eps * v, W) - g(X - eps * v, W)) / (2 * eps), rtol=1e-6)


def test_vjp_has_aux():
    out, pullback, aux = adgen.vjp(loss, X, W, has_aux=True)
    assert np.isclose(out, energy(X, W)) and aux["tag"] == "fit"
    assert np.allclose(aux["y"], np.sin(W * X) * X)
    g_x, g_w = pullback(2.0)
    eps = 1e-6
    fd_x = [(energy(X + eps * e, W) - energy(X - eps * e, W)) / (2 * eps) for e in np.eye(3)]
    assert np.allclose(g_x, 2.0 * np.array(fd_x), rtol=1e-6)
    assert np.isclose(g_w, 2.0 * (energy(X, W + eps) - energy(X, W - eps)) / (2 * eps))
    assert np.allclose(pullback(2.0)[0], g_x)        # reusable
    with pytest.raises(adgen.NonDifferentiableError, match="pair"):
        adgen.vjp(energy, X, W, has_aux=True)


@pytest.mark.parametrize("tangents, problem", [
    ((np.ones(3), np.array([1.0, 2.0, 3.0])), "is a number"),    # broadcast through w * x
    ((np.ones(3), [1.0]), "is a number"),
])
def test_jvp_tangent_of_another_structure_is_refused(tangents, problem):
    # w's tangent an array: it was broadcast through the tangent code, and jvp returned a
    # number that is the derivative along no direction
    with pytest.raises(adgen.AdgenError, match=problem):
        adgen.jvp(energy, (X, W), tangents)


def scaled(p):
    return np.sum(p["a"] ** 2) * p["b"]


@pytest.mark.parametrize("tangent", [{"a": np.ones(3)}, {"a": np.ones(3), "b": 1.0, "c": 2.0},
                                     {"a": np.ones(3), "b": np.ones(2)}])
def test_jvp_dict_tangent_must_match(tangent):
    # a missing key was a raw KeyError, an extra one ignored, an array for "b" gave an
    # array-valued derivative of a scalar function
    with pytest.raises(adgen.AdgenError):
        adgen.jvp(scaled, ({"a": X, "b": 0.5},), (tangent,))
    value, slope = adgen.jvp(scaled, ({"a": X, "b": 0.5},), ({"a": np.ones(3), "b": None},))
    assert np.isclose(slope, 0.5 * np.sum(2 * X))


def doubled_product(a, b):
    a *= 2.0                  # b is a too when the caller passes one array twice
    return np.sum(a * b)


def test_jvp_of_one_array_passed_twice_follows_the_write():
    # the tangents were two buffers: a_dot *= 2 did not reach b's tangent (6 sum z, not 8)
    z, v = X.copy(), np.array([1.0, -0.5, 0.25])
    _, slope = adgen.jvp(doubled_product, (z, z), (v, v))
    eps = 1e-6

    def along(t):
        w = X + t * v
        return doubled_product(w, w)

    assert np.isclose(slope, (along(eps) - along(-eps)) / (2 * eps), rtol=1e-7)


@pytest.mark.parametrize("call", [
    lambda z: adgen.jvp(doubled_product, (z, z), (np.ones(3), None)),
    lambda z: adgen.jacfwd(doubled_product)(z, z),
    lambda z: adgen.jvp(doubled_product, (z[:2], z[1:]), (np.ones(2), None)),
])
def test_jvp_of_aliased_primals_with_different_tangents_is_refused(call):
    with pytest.raises(adgen.NonDifferentiableError, match="primals 0 and 1"):
        call(X.copy())


@pytest.mark.parametrize("second", [
    lambda z: adgen.hessian(doubled_product)(z, z),
    lambda z: adgen.hvp(doubled_product)(z, z, np.ones(3)),
    lambda z: adgen.jacfwd(adgen.grad(doubled_product))(z, z),
    lambda z: adgen.jacrev(adgen.grad(doubled_product))(z, z),
    lambda z: adgen.hessian(doubled_product)(z[:2], z[1:]),
])
def test_second_derivatives_of_aliased_arguments_are_refused(second):
    # they gave 4 I where the differences of grad(f) (one buffer moved) give 8 I
    with pytest.raises(adgen.NonDifferentiableError, match="shares memory"):
        second(X.copy())
    H = adgen.hessian(lambda w: doubled_product(w, w))(X.copy())   # what the hint says
    assert np.allclose(H, 8.0 * np.eye(3))      # sum(2w * 2w) = 4 |w|^2


@adgen.differentiable
def fill_loss(w, x, scale=1.0):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return scale * np.sum(h ** 2)


def test_hessian_and_hvp_with_keyword_data():
    # refused before: 'hvp and hessian pass no keyword arguments to the function'
    w = np.array([[0.5, -0.3], [0.2, 0.8], [-0.4, 0.1]])
    data = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    g, eps = adgen.grad(fill_loss), 1e-6
    H = adgen.hessian(fill_loss)(w, x=data, scale=2.0)
    for k in range(6):
        e = np.zeros(6)
        e[k] = eps
        e = e.reshape(3, 2)
        col = (g(w + e, data, 2.0) - g(w - e, data, 2.0)) / (2 * eps)
        assert np.allclose(H[..., k // 2, k % 2], col, rtol=1e-6, atol=1e-9)
    v = np.ones_like(w)
    assert np.allclose(adgen.hvp(fill_loss)(w, v, x=data, scale=2.0),
                       np.tensordot(H, v, axes=2))
    other = data[::-1].copy()        # other keyword values: not the first call's
    assert np.allclose(adgen.hessian(fill_loss)(w, x=other, scale=0.5),
                       adgen.hessian(lambda ww: fill_loss(ww, other, 0.5))(w))


def test_jacfwd_of_grad_with_keyword_data():
    w = np.array([[0.5, -0.3], [0.2, 0.8], [-0.4, 0.1]])
    data = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    H = adgen.jacfwd(adgen.grad(fill_loss))(w, x=data, scale=2.0)
    g, eps = adgen.grad(fill_loss), 1e-6
    e = np.zeros_like(w)
    e[1, 0] = eps
    assert np.allclose(H[..., 1, 0], (g(w + e, data, 2.0) - g(w - e, data, 2.0)) / (2 * eps),
                       rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("tangents", [(1j * np.ones(3), None), (None, 1j)])
def test_jvp_complex_tangent_for_real_primal_is_refused(tangents):
    # an array's was cast into the real tangent buffer: a zero derivative, with only
    # NumPy's ComplexWarning
    with pytest.raises(adgen.AdgenError, match="complex tangent"):
        adgen.jvp(energy, (X, W), tangents)
