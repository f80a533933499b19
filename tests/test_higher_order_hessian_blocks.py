"""``adgen.hessian(f, argnums=(0, 1))`` as ``jax.hessian`` takes it: the blocks ``H[j][k]``
of the arguments listed, argument j's shape followed by argument k's. It was refused
(ArgnumsError: 'hessian takes one argument to differentiate (an int)'). Each column of the
blocks in column k is one gradient, with respect to every argument listed, of the derivative
along a direction of argument k. Checked against jax.hessian of a jax.numpy port.
"""

import numpy as np
import pytest

import adgen

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

rng = np.random.default_rng(5)
W = rng.normal(size=(2, 3))
B = rng.normal(size=2)
X = rng.normal(size=(4, 3))


def energy(w, b, scale, x):
    h = np.tanh(x @ w.T + b)
    return scale ** 2 * np.sum(h ** 2) + np.sum(w * w) * b[0]


def jenergy(w, b, scale, x):
    h = jnp.tanh(x @ w.T + b)
    return scale ** 2 * jnp.sum(h ** 2) + jnp.sum(w * w) * b[0]


def blocks_close(got, expected):
    assert type(got) is tuple and len(got) == len(expected)
    for row, jrow in zip(got, expected):
        assert type(row) is tuple and len(row) == len(jrow)
        for block, jblock in zip(row, jrow):
            assert np.shape(block) == np.shape(jblock)
            np.testing.assert_allclose(block, np.asarray(jblock), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("argnums", [(0, 1), (1, 0), (0,), (0, 1, 2), [2, 1]])
def test_blocks_against_jax(argnums, mutation):
    got = adgen.hessian(energy, argnums=argnums, mutation=mutation)(W, B, 1.5, X)
    blocks_close(got, jax.hessian(jenergy, argnums=tuple(argnums))(W, B, 1.5, X))


def energy_aux(w, b, scale, x):
    return energy(w, b, scale, x), np.sum(b)


def test_blocks_with_aux():
    got, aux = adgen.hessian(energy_aux, argnums=(0, 1), has_aux=True)(W, B, 1.5, X)
    blocks_close(got, jax.hessian(jenergy, argnums=(0, 1))(W, B, 1.5, X))
    assert aux == pytest.approx(np.sum(B))


def decays(u, k):
    u *= np.exp(-k)  # the caller's array, written once as a plain call writes it
    return np.sum(u ** 2) * k


def test_blocks_of_a_function_writing_its_argument():
    # f(u, k) = k exp(-2k) sum(u0^2), from the values before the write; by hand
    u = np.array([0.5, -1.0])
    u0 = u.copy()
    k = 0.3
    (huu, huk), (hku, hkk) = adgen.hessian(decays, argnums=(0, 1))(u, k)
    e = np.exp(-2 * k)
    np.testing.assert_allclose(huu, 2 * k * e * np.eye(2), rtol=1e-12)
    np.testing.assert_allclose(huk, 2 * u0 * (e - 2 * k * e), rtol=1e-12)
    np.testing.assert_allclose(hku, huk, rtol=1e-12)
    assert hkk == pytest.approx(np.sum(u0 ** 2) * (-4 * e + 4 * k * e))
    np.testing.assert_allclose(u, u0 * np.exp(-k))  # written once
