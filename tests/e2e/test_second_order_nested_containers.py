"""Second derivatives of functions that keep values in containers inside containers
(``cache["layer"]["z"] = x @ W``, ``hist["h"].append(h)``, ``L[1].append(v)``,
``e = d["inner"]; e["w"] = v``), followed in first order since d86854b.

``hessian``, ``hvp`` and ``jacfwd(grad(f))`` differentiate the jvp code adgen generates, where
the tangent's store reads the written part once more (``float_part(t_dot, dtype_kind(t))``):
analyses.parameter_parts took that for another use of the part and refused the write, in the
generated code's names (``t3['z'] = t2 changes cache['layer']``). The forms that stay refused
in first order are refused here too, in the user's names. Checked against central
differences of the gradient (itself checked against central differences in
test_nested_containers_written.py) and against ``jax.hessian`` of a jax.numpy port.
"""

import inspect
import re

import numpy as np
import pytest
from gradcheck import central

import adgen
import e2e.test_nested_containers_written as nested

X = nested.X


def two_layers(x, W):
    cache = {"l1": {}, "l2": {}}
    cache["l1"]["z"] = x @ W
    cache["l1"]["a"] = np.tanh(cache["l1"]["z"])
    cache["l2"]["z"] = cache["l1"]["a"] @ W.T
    return np.sum(cache["l2"]["z"] ** 2)


class Recorder:
    """Keeps a dict of lists of what its layer computes, read back in the loss."""

    def __init__(self, w):
        self.w = w

    def loss(self, x):
        log = {"acts": [], "pre": []}
        h = x[:3]
        for _ in range(2):
            z = h * self.w
            log["pre"].append(z)
            h = np.tanh(z)
            log["acts"].append(h)
        return np.sum(log["acts"][-1] ** 2) + np.sum(log["pre"][0] * log["acts"][0])


FOLLOWED = [nested.cache, nested.history, nested.lists_in_a_list, nested.through_another_name,
            Recorder(np.array([0.7, -1.2, 0.4])).loss, lambda x: nested.cache(x * 1.5)]
IDS = ["cache", "history", "lists_in_a_list", "through_another_name", "method", "lambda"]


def hessian_by_differences(f, x):
    g = adgen.grad(f)
    return np.array([central(lambda s: g(x + s * e), 0.0) for e in np.eye(x.size)]).T


@pytest.mark.parametrize("f", FOLLOWED, ids=IDS)
def test_second_derivatives(f):
    x = X.copy()
    expected = hessian_by_differences(f, x)
    np.testing.assert_allclose(adgen.hessian(f)(x), expected, rtol=1e-6, atol=1e-7)
    v = np.linspace(-1.0, 1.0, x.size)
    np.testing.assert_allclose(adgen.hvp(f)(x, v), expected @ v, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(x), expected, rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(x), expected, rtol=1e-6,
                               atol=1e-7)


def test_two_layers_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def port(x, W):
        z1 = x @ W
        z2 = jnp.tanh(z1) @ W.T
        return jnp.sum(z2 ** 2)

    x = X[:3].copy()
    W = nested.W.copy()
    H = adgen.hessian(two_layers)(x, W)
    np.testing.assert_allclose(H, np.asarray(jax.jit(jax.hessian(port))(x, W)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, hessian_by_differences(lambda y: two_layers(y, W), x),
                               rtol=1e-6, atol=1e-7)
    # the block of x and W: jacfwd of the gradient in W
    block = adgen.jacfwd(adgen.grad(two_layers, argnums=0), argnums=1)(x, W)
    np.testing.assert_allclose(block, np.asarray(jax.jit(jax.jacfwd(jax.grad(port), argnums=1))(x, W)),
                               rtol=1e-10, atol=1e-12)


GENERATED = re.compile(r"\b(t\d+|seq\d+|\w+_dot)\b")


@pytest.mark.parametrize("f", nested.REFUSED, ids=[f.__name__ for f in nested.REFUSED])
def test_refused_in_the_users_names(f):
    # what first order refuses (or refuses when it runs), second order refuses at the same
    # line, in the user's names: no temporaries (t3), no tangent names (cache_dot)
    with pytest.raises(adgen.AdgenError) as err:
        adgen.hessian(f)(X.copy())
    text = str(err.value)
    assert err.value.location is not None and err.value.location.file == __file__ or \
        err.value.location.file == nested.__file__, text
    assert not GENERATED.search(text.split("\n  hint")[0].split("error:", 1)[-1]), text


def calls_it(x):
    return nested.numbers_in_a_list_in_a_list(x) + np.sum(x ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_refused_in_a_callee_too(mutation):
    # L = [[0.0, 0.0]]; L[0][1] = x[0] * 3.0 in a function called by the one differentiated:
    # refused as at the top (it was a silently wrong gradient there: the refusal read a
    # table a callee compiled without a signature leaves empty); hessian refused too (it
    # was a non-symmetric Hessian, [[0, 0], [3, 0]] for 3 x0 x1)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(calls_it, mutation=mutation)(X.copy())
    # at the call, and in the function called there, at its line
    assert err.value.location.file == __file__
    line = inspect.getsourcelines(nested.numbers_in_a_list_in_a_list)[1] + 2
    assert f"{nested.__file__}:{line}" in str(err.value)
    assert "L[0][1] = x[0] * 3.0" in str(err.value)
    with pytest.raises(adgen.UnsupportedError):
        adgen.hessian(calls_it, mutation=mutation)(X.copy())
    # forward mode follows it
    d = np.linspace(-1.0, 1.0, X.size)
    _, tangent = adgen.jvp(calls_it, (X.copy(),), (d,))
    assert np.isclose(tangent, central(lambda s: calls_it(X + s * d), 0.0), rtol=1e-6)
