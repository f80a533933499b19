"""``helper(x, **kw)`` with ``kw`` a dict holding values with a derivative is differentiated
in forward mode and at second order (since session 28): the keyword values' tangents follow
the positional ones into ``call_jvp`` (transforms/tangent_call_forms.starred_call, read by
tangent_calls.keyword_tangents, as for keywords written out). jvp refused it ("does not
support passing values with a derivative by keyword to helper with **kwargs"); grad worked.
jvp against central differences, hessian against second differences, grad under both
policies, a hand formula."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
V = np.cos(np.arange(4.0))


def scaled_power(x, *, scale, power=2):
    return scale * x ** power


def keyword_only(x):
    kw = {"scale": x[0], "power": 2}
    return np.sum(scaled_power(x, **kw))


def with_options(x, **opts):
    s = opts.get("scale", 1.0)
    return s * np.sum(x ** 2) + opts["shift"]


def into_kwargs(x):
    kw = dict(scale=x[0], shift=x[1] ** 2)
    return with_options(x, **kw)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x, *, bias, temperature=1.0):
        return np.sum(np.tanh(self.w * x / temperature) + bias)


def method_given_a_dict(x):
    m = Model(1.5)
    settings = {"bias": np.sin(x[2]), "temperature": 2.0 + x[3] ** 2}
    return m.loss(x, **settings)


CASES = [keyword_only, into_kwargs, method_given_a_dict]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


def test_hand_formula():
    # into_kwargs: x0 * sum(x^2) + x1^2; its jvp along V
    g = np.array([np.sum(X ** 2), 0.0, 0.0, 0.0]) + 2 * X[0] * X + np.array([0, 2 * X[1], 0, 0])
    _, t = adgen.jvp(into_kwargs, (X.copy(),), (V,))
    assert t == pytest.approx(float(np.dot(g, V)))
