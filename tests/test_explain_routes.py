"""explain(grad(f), x)'s route says why second derivatives fall back to forward over reverse
in the user's words: the user's file, line, statement, function and argument names, never
adgen's generated file (<adgen f save second order>), its line numbers or temporaries."""

import re

import numpy as np
from gradcheck import central

import adgen


def layer_loss(x, params):  # a dict of arrays beside the differentiated array
    h = np.tanh(params["w"] @ x + params["b"])
    return np.sum(h ** 2)


def stack_loss(x, layers):  # a list of dicts (nested containers)
    h = x
    for layer in layers:
        h = np.tanh(layer["w"] @ h)
    return np.sum(h ** 3)


PARAMS = {"w": np.array([[0.4, -0.3], [0.2, 0.5]]), "b": np.array([0.1, -0.2])}
LAYERS = [{"w": np.array([[0.4, -0.3], [0.2, 0.5]])}, {"w": np.array([[0.9, 0.1], [-0.2, 0.3]])}]


def global_layer_loss(x):  # the route's hint, followed: the container read as a global
    h = np.tanh(PARAMS["w"] @ x + PARAMS["b"])
    return np.sum(h ** 2)


def assert_user_words(route):
    assert "<adgen" not in route, route
    assert not re.search(r"\bt\d+\b|\w+_bar\b|\bsh\b|_forward\b|_pullback\b|lambda_\d+", route), \
        route


def hessian_by_differences(f, x, *rest):
    g = adgen.grad(f)
    return np.array([central(lambda t: g(x + t * e, *rest), 0.0)
                     for e in np.eye(x.size)]).T


def test_a_container_argument_is_named_by_the_user_s_names():
    x = np.array([0.3, -0.7])
    for f, p, arg in ((layer_loss, PARAMS, "params"), (stack_loss, LAYERS, "layers")):
        route = adgen.explain(adgen.grad(f), x, p, file=None).route
        assert route.startswith("second derivatives: forward over reverse"), route
        assert_user_words(route)
        assert f"{__file__}: in {f.__name__}, the adjoint of its argument {arg}" in route, route
        assert f"read {arg} as a global" in route
        h = adgen.jacrev(adgen.grad(f))(x, p)
        np.testing.assert_allclose(h, hessian_by_differences(f, x, p), rtol=1e-6, atol=1e-7)


def test_a_lambda_is_called_the_lambda():
    x = np.array([0.3, -0.7])
    route = adgen.explain(adgen.grad(lambda v, p: np.sum(np.sin(p["w"] @ v))), x, PARAMS,
                          file=None).route
    assert "in the lambda, the adjoint of its argument p" in route, route
    assert_user_words(route)


def test_the_hint_followed_takes_reverse_over_reverse():
    x = np.array([0.3, -0.7])
    route = adgen.explain(adgen.grad(global_layer_loss), x, file=None).route
    assert route.startswith("second derivatives: reverse over reverse"), route
    h = adgen.jacrev(adgen.grad(global_layer_loss))(x)
    np.testing.assert_allclose(h, hessian_by_differences(layer_loss, x, PARAMS), rtol=1e-6,
                               atol=1e-7)
