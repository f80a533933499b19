"""A dict of parameters built inside the loss and stepped in place by a loop over it (``for
k in params: params[k] -= lr * grads[k]``): under hessian (and hvp, jacfwd of grad) the
refusal said "code that sets an attribute of an object it is given" with a hint about call
counters. It now names the dict written, the loop over it, and the two rewrites that
differentiate to second order (a loop over ``list(params)``, a new dict by a comprehension),
which are checked here against second differences. grad (both policies) and jvp of the
in-place step are checked against central differences.
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_hessian, numerical_jvp

import adgen

POLICIES = ["save", "strict"]
X = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]])
LR = 0.1
X0 = np.array([0.3, -0.5, 0.8, 0.2])


def loss(params):
    h = np.tanh(X @ params["w"] + params["b"])
    return np.sum(h ** 2)


def stepped_in_place(x):
    params = {"w": x[:3] * 1.0, "b": x[3] * 1.0}
    grads = {k: np.sin(v) * x[0] for k, v in params.items()}
    for k in params:
        params[k] -= LR * grads[k]  # MARK step
    return loss(params)


def stepped_over_a_copy(x):
    params = {"w": x[:3] * 1.0, "b": x[3] * 1.0}
    grads = {k: np.sin(v) * x[0] for k, v in params.items()}
    for k in list(params):
        params[k] -= LR * grads[k]
    return loss(params)


def rebuilt(x):
    params = {"w": x[:3] * 1.0, "b": x[3] * 1.0}
    grads = {k: np.sin(v) * x[0] for k, v in params.items()}
    params = {k: params[k] - LR * grads[k] for k in params}
    return loss(params)


def _line(mark):
    with open(__file__) as src:
        return next(i for i, text in enumerate(src, 1) if f"MARK {mark}" in text)


@pytest.mark.parametrize("how", ["hessian", "hvp", "jacfwd of grad"])
def test_the_refusal_names_the_dict_and_the_loop(how):
    if how == "hessian":
        run = lambda: adgen.hessian(stepped_in_place)(X0)  # noqa: E731
    elif how == "hvp":
        run = lambda: adgen.hvp(stepped_in_place)(X0, np.ones(4))  # noqa: E731
    else:
        run = lambda: adgen.jacfwd(adgen.grad(stepped_in_place))(X0)  # noqa: E731
    with pytest.raises(adgen.UnsupportedError) as info:
        run()
    text = str(info.value)
    assert f"{__file__}:{_line('step')}:" in text
    assert "writes an item of params" in text
    assert "a loop over params itself" in text
    assert "for k in list(params)" in text
    assert "attribute" not in text and "call counter" not in text


@pytest.mark.parametrize("f", [stepped_over_a_copy, rebuilt])
def test_the_hints_rewrites_differentiate_to_second_order(f):
    np.testing.assert_allclose(adgen.hessian(f)(X0), numerical_hessian(f, X0),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [stepped_in_place, stepped_over_a_copy, rebuilt])
@pytest.mark.parametrize("policy", POLICIES)
def test_gradient(f, policy):
    # (strict may refuse the in-place step: sin(v) of grads reads the array it overwrites)
    check_grad(f, (X0,), mutation=policy)


@pytest.mark.parametrize("f", [stepped_in_place, stepped_over_a_copy, rebuilt])
def test_jvp(f):
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (X0,), (v,))
    np.testing.assert_allclose(t, numerical_jvp(f, (X0,), (v,)), rtol=1e-6, atol=1e-9)
