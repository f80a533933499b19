"""The SGD update people write over a dict of parameters, ``for k in p: p[k] = p[k] - lr *
g[k]``, was refused under grad as 'a store into p at an item other than the one this step
walks' (the check for a list loop storing ahead, ws[i + 1] = ..., took the key for an item
another step reads). A store at the key the step walks is read by no later step. Gradients
under both policies against central differences; jvp and hessian too. A list loop storing
ahead stays refused.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

G = {"W": np.array([[1.0, -2.0], [0.5, 0.25]]), "b": np.array([0.5, -1.0])}
PARAMS = {"W": np.array([[0.3, 0.1], [-0.4, 0.2]]), "b": np.array([2.0, -0.5])}
X = np.array([0.7, -1.3])
POLICIES = ["save", "strict"]


def loss(p):
    return np.sum(np.tanh(p["W"] @ X + p["b"]) ** 2)


def after_a_step(lr, params):
    p = {k: v.copy() for k, v in params.items()}
    for k in p:
        p[k] = p[k] - lr * G[k]
    return loss(p)


def after_a_scaling(lr, params):
    p = dict(params)
    for name in p:
        p[name] = p[name] * lr
    return loss(p)


def in_place_on_the_argument(params, lr):
    for k in params:
        params[k] = params[k] - lr * params[k] ** 2
    return loss(params)


def copy_of_the_key(lr, params):
    p = dict(params)
    for k in p:
        key = k
        p[key] = np.sin(p[key]) * lr
    return loss(p)


CASES = [after_a_step, after_a_scaling, copy_of_the_key]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradient_of_the_rate_and_the_parameters(f, policy):
    g = adgen.grad(f, argnums=(0, 1), mutation=policy)(0.3, PARAMS)
    n0 = numerical_grad(f, (0.3, PARAMS), 0)
    n1 = numerical_grad(f, (0.3, PARAMS), 1)
    np.testing.assert_allclose(g[0], n0, rtol=1e-6, atol=1e-9)
    for k in PARAMS:
        np.testing.assert_allclose(g[1][k], n1[k], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", CASES)
def test_jvp_of_the_rate(f):
    _, t = adgen.jvp(f, (0.3, PARAMS), (1.0, None))
    np.testing.assert_allclose(t, numerical_grad(f, (0.3, PARAMS), 0), rtol=1e-6)


def test_second_derivative_refused_at_the_line():
    # (reverse mode over the jvp code does not follow the dict's tangent yet: refused, not
    # wrong; docs/limitations.md)
    with pytest.raises(adgen.UnsupportedError, match="line|:28:"):
        adgen.hessian(after_a_step)(0.3, PARAMS)


@pytest.mark.parametrize("policy", POLICIES)
def test_update_of_the_dict_given(policy):
    def fresh():
        return {k: v.copy() for k, v in PARAMS.items()}

    g = adgen.grad(in_place_on_the_argument, mutation=policy)(fresh(), 0.3)
    n = numerical_grad(in_place_on_the_argument, (fresh(), 0.3), 0)
    for k in PARAMS:
        np.testing.assert_allclose(g[k], n[k], rtol=1e-6, atol=1e-9)


def test_a_list_loop_storing_ahead_stays_refused():
    def ahead(x):
        ws = [x, 2 * x, 3 * x]
        for i, w in enumerate(ws[:-1]):
            ws[i + 1] = ws[i + 1] * w
        s = 0.0
        for i, w in enumerate(ws):
            if i + 1 < len(ws):
                ws[i + 1] = ws[i + 1] * w
            s = s + np.sum(w)
        return s

    with pytest.raises(adgen.UnsupportedError, match="at an item other than the one this step"):
        adgen.grad(ahead)(np.array([0.5, 1.5]))
