"""The value of a list or dict method bound to a name, as people write it: ``t =
hist.append(h)`` (None in Python; the append still happens), ``scale =
cfg.setdefault("scale", 2 * x)`` (the item, the default where the key was absent), ``y =
stack.pop()`` (the item: its gradient flows), ``v = d.get(k, default)``.

Before session 21, ``t = hist.append(h)`` was left an assignment of a call and the list's
adjoint never reached ``h`` (a silently zero gradient, and an IndexError under jvp), and
``d.setdefault(k, v)`` tested ``k not in d`` again in the pullback, on the dict the store had
filled, so the default's gradient was silently zero. Gradients under both policies, jvp and
hessian against central differences.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_hessian

import adgen

X = np.array([0.3, -0.7, 1.2])
T = np.array([1.0, -0.5, 0.25])
POLICIES = ["save", "strict"]


def unrolled_states(x):
    hist = []
    h = x
    for _ in range(3):
        h = np.tanh(1.5 * h)
        done = hist.append(h)
    return np.sum(np.stack(hist) ** 2) + (done is None)


def logged_into_a_list_given(x, log):
    r = log.append(np.sin(x))
    s = 0.0
    for v in log:
        s = s + np.sum(v ** 2)
    return s + (r is None)


def scale_by_default(x):
    cfg = {"shift": 0.5}
    scale = cfg.setdefault("scale", x * x)
    return np.sum(scale * x + cfg["shift"] * cfg["scale"])


def scale_already_set(x):
    cfg = {"scale": np.cos(x)}
    scale = cfg.setdefault("scale", x * 3.0)
    return np.sum(scale * x)


def scale_set_in_a_dict_given(x, cfg):
    scale = cfg.setdefault("scale", np.exp(x))
    return np.sum(scale * x)


def popped_item(x):
    stack = [x, np.sin(x), x * x]
    top = stack.pop()
    return np.sum(top * stack[1]) + np.sum(stack[0])


def got_with_a_default(x):
    d = {"a": np.sin(x)}
    u = d.get("a", x)
    v = d.get("b", x * 3.0)
    return np.sum(u * v)


def one_argument(f):
    if f is logged_into_a_list_given:
        return lambda x: f(x, [x * 2.0])
    if f is scale_set_in_a_dict_given:
        return lambda x: f(x, {"shift": 1.0})
    return f


CASES = [unrolled_states, logged_into_a_list_given, scale_by_default, scale_already_set,
         scale_set_in_a_dict_given, popped_item, got_with_a_default]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradient(f, policy):
    g = one_argument(f)
    expected = numerical_grad(g, (X,), 0)
    np.testing.assert_allclose(adgen.grad(g, mutation=policy)(X), expected, rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("f", CASES)
def test_jvp(f):
    g = one_argument(f)
    value, tangent = adgen.jvp(g, (X,), (T,))
    assert value == pytest.approx(g(X))
    assert tangent == pytest.approx(float(numerical_grad(g, (X,), 0) @ T), rel=1e-6)


@pytest.mark.parametrize("f", CASES)
def test_hessian(f):
    g = one_argument(f)
    np.testing.assert_allclose(adgen.hessian(g)(X), numerical_hessian(g, X), rtol=1e-5,
                               atol=1e-6)


def test_the_append_happens_and_binds_none():
    log = [X * 2.0]
    adgen.grad(logged_into_a_list_given)(X, log)
    assert len(log) == 2
    np.testing.assert_allclose(log[1], np.sin(X))
