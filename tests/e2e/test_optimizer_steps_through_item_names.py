"""An optimizer step in a helper that writes each array of a dict through a name read from it
(``for p, g in zip(params.values(), grads.values()): p -= lr * g``, or ``p = params["w"];
p -= lr * g``), followed by a loss that reads the dict through another helper.

The gradient in ``grads`` was zero under both policies (-0.1 times the loss's gradient
expected): the helper keeps the adjoints of the arrays it writes in shadow memory, while the
caller handed it the adjoint of the dict its loss call gave back, which stayed in the
deposit. A helper holding arrays it writes in place now takes the dict's adjoint over, and
its slots' parts go to those arrays' shadows (pullback_parameters.taken_over). Checked
against central differences and by hand, both policies.
"""

import copy

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]])
LR = 0.1


def loss(params, x):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum(h ** 2)


def sgd_zip(params, grads, lr):
    for p, g in zip(params.values(), grads.values()):
        p -= lr * g


def sgd_names(params, grads, lr):
    p = params["w"]
    p -= lr * grads["w"]
    q = params["b"]
    q -= lr * grads["b"]


def zip_step(params, grads):
    sgd_zip(params, grads, LR)
    return loss(params, X)


def named_step(params, grads):
    sgd_names(params, grads, LR)
    return loss(params, X)


def _dicts():
    rng = np.random.default_rng(7)
    return ({"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)},
            {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)})


def _flat_loss(f, which):
    params, grads = _dicts()
    shapes = {k: v.shape for k, v in (params if which == 0 else grads).items()}

    def of(flat):
        args = list(copy.deepcopy(_dicts()))
        k0 = 0
        for k, s in shapes.items():
            n = int(np.prod(s))
            args[which][k] = flat[k0:k0 + n].reshape(s).copy()
            k0 += n
        return f(*args)

    start = np.concatenate([v.ravel() for v in (params if which == 0 else grads).values()])
    return of, start, shapes


@pytest.mark.parametrize("f", [zip_step, named_step], ids=["zip", "names"])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_both_dicts_get_their_gradients(f, policy):
    params, grads = _dicts()
    g_params, g_grads = adgen.grad(f, argnums=(0, 1), mutation=policy)(params, grads)
    for which, got in ((0, g_params), (1, g_grads)):
        of, start, shapes = _flat_loss(f, which)
        want = numerical_grad(of, (start,), 0)
        np.testing.assert_allclose(np.concatenate([got[k].ravel() for k in shapes]), want,
                                   rtol=1e-6, atol=1e-9)
    # by hand: the step is p - lr g, so d/dgrads = -lr d/dparams
    np.testing.assert_allclose(g_grads["w"], -LR * g_params["w"], rtol=1e-12)
    np.testing.assert_allclose(g_grads["b"], -LR * g_params["b"], rtol=1e-12)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_the_arguments_are_stepped(policy):
    params, grads = _dicts()
    want = {k: params[k] - LR * grads[k] for k in params}
    adgen.grad(zip_step, argnums=1, mutation=policy)(params, grads)
    for k in want:
        np.testing.assert_allclose(params[k], want[k], rtol=1e-12)
