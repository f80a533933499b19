"""An optimizer step in a helper (``for p, g in zip(params.values(), grads.values()): p -=
lr * g``, ``for k in params: params[k] -= lr * grads[k]``, ``for k, p in params.items(): p
-= lr * grads[k]``) given a ``grads`` dict the function made itself: by a comprehension, by
a helper returning a dict, by ``adgen.grad`` of the loss inside the function (a training
step differentiated through, as in meta-learning), or by a gradient function held in a
global.

Until session 25 these raised a raw NumPy casting error (the helper took ``grads`` for an
array, its adjoint a number's cell), or were refused as "a dict written in place by index".
On the way, two silent wrong gradients (both policies, strict did not refuse):

- ``for k, p in params.items(): p -= lr * grads[k]`` then a loss read through a helper:
  every item of ``grads`` but the last got a zero gradient (the adjoint of ``params``'
  items went to the shadows of the arrays ``p`` held after the loop only);
- a helper whose pullback reads the arrays of a list or dict argument (``[np.sin(w) for w
  in ws]``), followed by the caller writing those arrays in place (``w = ws[i]; w -= ...``):
  the helper's pullback read the new values (no guard watched a list's or dict's arrays).

Checked against central differences under both policies, and by hand.
"""

import copy

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen
from adgen import MutationError

POLICIES = ["save", "strict"]
X = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]])
LR = 0.1


def loss(params, x):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum(h ** 2)


def sgd_zip(params, grads, lr):
    for p, g in zip(params.values(), grads.values()):
        p -= lr * g


def sgd_keys(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]


def sgd_items(params, grads, lr):
    for k, p in params.items():
        p -= lr * grads[k]


STEPS = [sgd_zip, sgd_keys, sgd_items]


def doubled(params, x):
    return {"w": 2.0 * params["w"], "b": 2.0 * params["b"]}


def sines(params):
    out = {k: np.sin(v) for k, v in params.items()}
    return out


GRAD_OF_LOSS = adgen.grad(loss)


def linear_step(step, source):
    """A step whose grads are linear in params (strict must compute: nothing the gradient
    reads is overwritten)."""
    if source == "comprehension":
        def f(params, x):
            grads = {k: 2.0 * v for k, v in params.items()}
            step(params, grads, LR)
            return loss(params, x)
    elif source == "helper":
        def f(params, x):
            grads = doubled(params, x)
            step(params, grads, LR)
            return loss(params, x)
    return f


def training_step(step, source):
    """A training step differentiated through: grads is the loss's gradient."""
    if source == "grad inside":
        def f(params, x):
            grads = adgen.grad(loss)(params, x)
            step(params, grads, LR)
            return loss(params, x)
    elif source == "global grad":
        def f(params, x):
            grads = GRAD_OF_LOSS(params, x)
            step(params, grads, LR)
            return loss(params, x)
    return f


def _params():
    rng = np.random.default_rng(0)
    return {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("source", ["comprehension", "helper"])
@pytest.mark.parametrize("policy", POLICIES)
def test_grads_linear_in_params(step, source, policy):
    f = linear_step(step, source)
    got = check_grad(f, (_params(), X), 0, mutation=policy, strict_must_compute=True)
    # by hand: the step is params - lr * 2 params = 0.8 params, so the gradient is 0.8
    # times the loss's at 0.8 params: dz = 2 h (1 - h^2), dw = x' dz, db = sum dz
    p = _params()
    h = np.tanh(X @ (0.8 * p["w"]) + 0.8 * p["b"])
    dz = 2.0 * h * (1.0 - h ** 2)
    np.testing.assert_allclose(got["w"], 0.8 * X.T @ dz, rtol=1e-10)
    np.testing.assert_allclose(got["b"], 0.8 * dz.sum(axis=0), rtol=1e-10)


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("source", ["grad inside", "global grad"])
@pytest.mark.parametrize("policy", POLICIES)
def test_training_steps_differentiated_through(step, source, policy):
    f = training_step(step, source)
    check_grad(f, (_params(), X), 0, mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("policy", POLICIES)
def test_grads_reading_params_the_step_overwrites(step, policy):
    # sin's gradient reads params, which the step overwrites: save keeps a copy, strict
    # refuses naming the step
    def f(params, x):
        grads = sines(params)
        step(params, grads, LR)
        return loss(params, x)

    if policy == "strict":
        with pytest.raises(MutationError, match="overwrites"):
            adgen.grad(f, mutation="strict")(_params(), X)
    else:
        check_grad(f, (_params(), X), 0, mutation=policy)


def stepped_then_loss(params, grads):
    sgd_items(params, grads, LR)
    return loss(params, X)


def stepped_inline_then_loss(params, grads):
    for k, p in params.items():
        p -= LR * grads[k]
    return loss(params, X)


@pytest.mark.parametrize("f", [stepped_then_loss, stepped_inline_then_loss],
                         ids=["helper", "inline"])
@pytest.mark.parametrize("policy", POLICIES)
def test_every_item_of_the_step_gets_its_gradient(f, policy):
    params = _params()
    grads = {k: 0.5 * v + 1.0 for k, v in params.items()}
    g_params, g_grads = check_grad(f, (params, grads), (0, 1), mutation=policy,
                                   strict_must_compute=True)
    # by hand: the loss reads params - lr grads, so d/dgrads = -lr d/dparams
    for k in params:
        np.testing.assert_allclose(g_grads[k], -LR * g_params[k], rtol=1e-12)
        assert np.abs(g_grads[k]).max() > 1e-3


def sines_of_list(ws):
    return [np.sin(w) for w in ws]


def sines_by_key(params):
    out = {}
    for k in params:
        out[k] = np.sin(params[k])
    return out


def list_stepped_after_a_helper_read_it(ws):
    gs = sines_of_list(ws)
    for i in range(len(ws)):
        w = ws[i]
        w -= LR * gs[i]
    return np.sum(np.tanh(X @ ws[0] + ws[1]) ** 2)


def dict_item_stepped_after_a_helper_read_it(params):
    grads = sines_by_key(params)
    p = params["w"]
    p -= LR * grads["w"]
    return loss(params, X)


@pytest.mark.parametrize("f, arg", [
    (list_stepped_after_a_helper_read_it, lambda: list(_params().values())),
    (dict_item_stepped_after_a_helper_read_it, _params)], ids=["list", "dict"])
def test_arrays_a_helper_read_then_written_by_the_caller(f, arg):
    # save: the helper's pullback reads the values it was given
    got = adgen.grad(f)(arg())
    want = numerical_grad(f, (arg(),), 0)
    for a, b in zip(got.values() if isinstance(got, dict) else got,
                    want.values() if isinstance(want, dict) else want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # strict: the caller's write overwrites what the helper's gradient reads
    with pytest.raises(MutationError, match="overwrites"):
        adgen.grad(f, mutation="strict")(arg())


@pytest.mark.parametrize("policy", POLICIES)
def test_the_arguments_are_stepped(policy):
    params = _params()
    want = {k: 0.8 * v for k, v in copy.deepcopy(params).items()}
    adgen.grad(linear_step(sgd_items, "helper"), mutation=policy)(params, X)
    for k in want:
        np.testing.assert_allclose(params[k], want[k], rtol=1e-12)
