"""CS231n-style layers, written as that course's assignments write them: ``affine_forward``
returning ``(out, cache)``, a ``batchnorm_forward`` reading its options with
``bn_param.get(key, default)`` and updating the running means in place, a
``conv_forward_naive`` with four nested loops over ``np.pad``'s result and its stride and pad
in a ``conv_param`` dict. Every gradient is checked against central differences.

Problems a new user ran into:

- ``eps = bn_param.get("eps", 1e-5)``: a dict's ``get`` called on a parameter had no
  derivative rule: a MissingRuleError at the line once the value it returned had a gradient
  (it does: eps is under the square root), though ``bn_param["eps"]`` had one.
- ``config.setdefault("momentum", 0.9)`` (optim.py): refused as an in-place method.
- ``x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))`` with ``pad`` read from
  ``conv_param`` and ``x_pad`` then written in place: the pullback read the cotangent of the
  ``pad_width`` display item by item (``ct[2][0]``), but np.pad gives it None: a TypeError
  ('NoneType' object is not subscriptable) instead of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    cache = (x, w, b)
    return out, cache


def relu_forward(x):
    out = np.maximum(0, x)
    cache = x
    return out, cache


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "train":
        sample_mean = np.mean(x, axis=0)
        sample_var = np.var(x, axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        cache = (x, x_hat, sample_mean, sample_var, gamma, eps)
        running_mean *= momentum
        running_mean += (1 - momentum) * sample_mean
        running_var *= momentum
        running_var += (1 - momentum) * sample_var
    else:
        x_hat = (x - running_mean) / np.sqrt(running_var + eps)
        out = gamma * x_hat + beta
        cache = None
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache


def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(log_probs[np.arange(x.shape[0]), y]) / x.shape[0]


def net_loss(params, X, y, bn_param):
    h, _ = affine_forward(X, params["W1"], params["b1"])
    h, _ = batchnorm_forward(h, params["gamma1"], params["beta1"], bn_param)
    h, _ = relu_forward(h)
    scores, _ = affine_forward(h, params["W2"], params["b2"])
    return softmax_loss(scores, y)


def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant")
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = x_pad[n, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    return out, (x, w, b, conv_param)


def conv_loss(x, w, b, conv_param):
    out, _ = conv_forward_naive(x, w, b, conv_param)
    out, _ = relu_forward(out)
    return np.sum(out ** 2)


def padded_then_scaled(x, pad_param):
    pad = pad_param["pad"]
    x_pad = np.pad(x, ((0, 0), (pad, pad)), mode="constant")
    for i in range(x_pad.shape[1]):
        x_pad[:, i] = x_pad[:, i] * (i + 1.0)
    return np.sum(x_pad ** 2)


def _params(rng):
    return {"W1": 0.5 * rng.standard_normal((4, 5)), "b1": 0.1 * rng.standard_normal(5),
            "gamma1": 1.0 + 0.1 * rng.standard_normal(5), "beta1": 0.1 * rng.standard_normal(5),
            "W2": 0.5 * rng.standard_normal((5, 3)), "b2": 0.1 * rng.standard_normal(3)}


def _close(g, ref):
    assert set(g) == set(ref)
    for k in ref:
        np.testing.assert_allclose(g[k], ref[k], rtol=1e-5, atol=1e-7, err_msg=k)


def test_batchnorm_train_mode_with_options_read_by_get():
    rng = np.random.default_rng(0)
    params, X, y = _params(rng), rng.standard_normal((6, 4)), np.array([0, 1, 2, 0, 1, 2])
    bn_param = {"mode": "train", "running_mean": np.ones(5), "running_var": np.ones(5)}
    ref = numerical_grad(lambda p: net_loss(p, X, y, {"mode": "train"}), (params,), 0)
    _close(adgen.grad(net_loss, mutation="save")(params, X, y, bn_param), ref)
    # the running statistics were updated in place, once, as the plain function does
    np.testing.assert_allclose(bn_param["running_mean"], 0.9 + 0.1 * np.mean(
        affine_forward(X, params["W1"], params["b1"])[0], axis=0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_batchnorm_test_mode_with_eps_from_get(mutation):
    rng = np.random.default_rng(1)
    params, X, y = _params(rng), rng.standard_normal((6, 4)), np.array([2, 1, 0, 0, 1, 2])
    stats = {"running_mean": rng.standard_normal(5), "running_var": rng.random(5) + 0.5}
    bn_param = {"mode": "test", "eps": 0.3, **stats}
    ref = numerical_grad(lambda p: net_loss(p, X, y, dict(bn_param)), (params,), 0)
    _close(adgen.grad(net_loss, mutation=mutation)(params, X, y, bn_param), ref)
    # the gradient with respect to the options dict: eps and the running statistics
    g = adgen.grad(net_loss, argnums=3, mutation=mutation)(params, X, y, dict(bn_param))
    ref = numerical_grad(lambda d: net_loss(params, X, y, d), (dict(bn_param),), 0)
    np.testing.assert_allclose(g["eps"], ref["eps"], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(g["running_mean"], ref["running_mean"], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(g["running_var"], ref["running_var"], rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_get_falls_back_to_its_default(mutation):
    def scaled(x, opts, default_scale):
        scale = opts.get("scale", default_scale)
        return np.sum(np.tanh(scale * x))

    x = np.array([0.3, -0.7, 1.1])
    for opts in ({}, {"scale": 2.0}):
        g = adgen.grad(scaled, argnums=(0, 2), mutation=mutation)(x, opts, 1.5)
        for k in (0, 2):
            ref = numerical_grad(lambda *a: scaled(*a), (x, opts, 1.5), k)
            np.testing.assert_allclose(g[1 if k else 0], ref, rtol=1e-5, atol=1e-8)
        s = opts.get("scale", 1.5)
        np.testing.assert_allclose(g[0], s / np.cosh(s * x) ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_conv_forward_naive_with_pad_from_conv_param(mutation):
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((2, 2, 4, 4)), rng.standard_normal((3, 2, 3, 3)), \
        rng.standard_normal(3)
    conv_param = {"stride": 2, "pad": 1}
    gs = adgen.grad(conv_loss, argnums=(0, 1, 2), mutation=mutation)(x, w, b, conv_param)
    for k, g in enumerate(gs):
        ref = numerical_grad(lambda *a: conv_loss(*a, conv_param), (x, w, b), k)
        np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-7)


def test_padded_array_written_in_place():
    # (save only: strict refuses the write, taking np.pad's result for one its gradient
    # reads -- its pullback reads only the shape of what its tape holds)
    mutation = "save"
    x = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]])
    g = adgen.grad(padded_then_scaled, mutation=mutation)(x, {"pad": 2})
    # x[:, j] lands in column j + 2, scaled by j + 3: d/dx of sum (c x)^2 = 2 c^2 x
    np.testing.assert_allclose(g, 2.0 * (np.arange(3) + 3.0) ** 2 * x)
    np.testing.assert_allclose(g, numerical_grad(padded_then_scaled, (x, {"pad": 2}), 0),
                               rtol=1e-6)


def sgd_momentum(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    v = config.get("velocity", np.zeros_like(w))
    v = config["momentum"] * v - config["learning_rate"] * dw
    next_w = w + v
    config["velocity"] = v
    return next_w, config


def two_momentum_steps(w, dw, config):
    w1, config = sgd_momentum(w, dw, config)
    w2, config = sgd_momentum(w1, dw * w1, config)
    return np.sum(w2 ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("velocity", [None, np.array([0.05, -0.1])])
def test_update_rule_with_setdefault(mutation, velocity):
    """config.setdefault(key, value), as CS231n's optim.py sets its defaults (it was refused:
    'the in-place method .setdefault() is not supported yet')."""
    w, dw = np.array([1.0, -0.5]), np.array([0.3, 0.2])
    config = {"learning_rate": 0.1} if velocity is None else \
        {"learning_rate": 0.1, "velocity": velocity}

    def loss(w, dw, config):
        return two_momentum_steps(w, dw, dict(config))

    for k in (0, 1):
        g = adgen.grad(two_momentum_steps, argnums=k, mutation=mutation)(w, dw, dict(config))
        np.testing.assert_allclose(g, numerical_grad(loss, (w, dw, config), k), rtol=1e-6)
    g = adgen.grad(two_momentum_steps, argnums=2, mutation=mutation)(w, dw, dict(config))
    ref = numerical_grad(loss, (w, dw, config), 2)
    for key in config:
        np.testing.assert_allclose(g[key], ref[key], rtol=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_setdefault_result_used(mutation):
    def scaled(x, opts):
        s = opts.setdefault("scale", 2.0)
        return np.sum(s * x ** 2) + opts["scale"]

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(adgen.grad(scaled, mutation=mutation)(x, {}), 4.0 * x)
    gx, gopts = adgen.grad(scaled, argnums=(0, 1), mutation=mutation)(x, {"scale": 3.0})
    np.testing.assert_allclose(gx, 6.0 * x)
    np.testing.assert_allclose(gopts["scale"], np.sum(x ** 2) + 1.0)


def test_forward_mode_through_options_read_by_get():
    """jvp in the direction of the options dict: eps = bn_param.get("eps", 1e-5) ran as a
    builtin with no tangent (a TypeError in the generated jvp); the item's tangent, or the
    default's where the key is absent, now follows."""
    rng = np.random.default_rng(3)
    params, X, y = _params(rng), rng.standard_normal((6, 4)), np.array([2, 1, 0, 0, 1, 2])
    stats = {"running_mean": rng.standard_normal(5), "running_var": rng.random(5) + 0.5}
    bn_param = {"mode": "test", "eps": 0.3, **stats}
    direction = {"mode": None, "eps": 1.0, "running_mean": rng.standard_normal(5),
                 "running_var": rng.standard_normal(5)}
    zero = {k: np.zeros_like(v) for k, v in params.items()}
    _, jv = adgen.jvp(net_loss, (params, X, y, bn_param), (zero, None, None, direction))

    def along(t):
        moved = {k: (v if direction[k] is None else v + t * direction[k])
                 for k, v in bn_param.items()}
        return net_loss(params, X, y, moved)

    np.testing.assert_allclose(jv, numerical_grad(along, (0.0,), 0), rtol=1e-5)

    def scaled(x, opts, default_scale):
        return np.sum(np.tanh(opts.get("scale", default_scale) * x))

    x = np.array([0.3, -0.7, 1.1])
    _, jv = adgen.jvp(scaled, (x, {}, 1.5), (np.zeros(3), {}, 1.0))
    np.testing.assert_allclose(jv, np.sum(x / np.cosh(1.5 * x) ** 2))
    _, jv = adgen.jvp(scaled, (x, {"scale": 2.0}, 1.5), (np.zeros(3), {"scale": 1.0}, 1.0))
    np.testing.assert_allclose(jv, np.sum(x / np.cosh(2.0 * x) ** 2))
    _, jv = adgen.jvp(scaled, (x, {}, 1.5), (np.ones(3), {}, 0.0))  # default without one
    np.testing.assert_allclose(jv, np.sum(1.5 / np.cosh(1.5 * x) ** 2))


def test_forward_mode_through_a_dicts_values_and_items():
    """sum(params.values()), list(params.items()) in the direction of the dict: the view ran
    as a builtin with no tangent (a TypeError, 'NoneType' object is not iterable)."""
    def total(x, p):
        return np.sum(x * sum(p.values()))

    def first_and_second(x, p):
        pairs = list(p.items())
        return np.sum(pairs[0][1] * x) + np.sum(pairs[1][1] ** 2)

    x = np.array([1.0, 2.0])
    p = {"a": np.array([0.5, 0.1]), "b": np.array([1.5, -1.0])}
    t = {"a": np.array([1.0, 0.0]), "b": np.array([0.5, 2.0])}
    for fn in (total, first_and_second):
        _, jv = adgen.jvp(fn, (x, p), (np.zeros(2), t))

        def along(s, fn=fn):
            return fn(x, {k: p[k] + s * t[k] for k in p})

        np.testing.assert_allclose(jv, numerical_grad(along, (0.0,), 0), rtol=1e-6)
    _, jv = adgen.jvp(total, (x, p), (np.zeros(2), t))
    np.testing.assert_allclose(jv, np.sum(x * (t["a"] + t["b"])))  # 5.5 by hand


class ModeNet:
    """A net that sets each layer's mode as CS231n's FullyConnectedNet.loss does: through the
    loop variable over self.bn_params, a second name for each dict (it was refused: 'changes
    bn_param in place, and self reaches the same list, dict or object')."""

    def __init__(self):
        self.W = np.array([[0.5, -0.3], [0.2, 0.8]])
        self.bn_params = [{"mode": "train", "scale": 2.0}, {"mode": "train", "scale": 3.0}]

    def loss(self, X, y=None):
        mode = "test" if y is None else "train"
        for bn_param in self.bn_params:
            bn_param["mode"] = mode
        s = 1.0
        for bn_param in self.bn_params:
            s = s * bn_param["scale"] if bn_param["mode"] == "train" else s
        return s * np.sum(np.tanh(X @ self.W))

    def rescale(self, X, k):
        for bn_param in self.bn_params:
            bn_param["scale"] = k  # a number: its gradient follows the name, still refused
        return np.sum(np.tanh(X @ self.W)) * self.bn_params[0]["scale"]


@pytest.mark.parametrize("mutation", POLICIES)
def test_mode_set_through_the_loop_variable(mutation):
    X = np.array([[1.0, 2.0], [0.5, -1.0]])
    for y in (1, None):
        g = adgen.grad(ModeNet.loss, mutation=mutation)(ModeNet(), X, y)
        ref = numerical_grad(lambda m: ModeNet.loss(m, X, y), (ModeNet(),), 0)
        np.testing.assert_allclose(g.W, ref.W, rtol=1e-6)
        for got, want in zip(g.bn_params, ref.bn_params):
            np.testing.assert_allclose(got["scale"], want["scale"], rtol=1e-6, atol=1e-9)
    t = np.sum(np.tanh(X @ ModeNet().W))
    assert adgen.grad(ModeNet.loss)(ModeNet(), X, 1).bn_params[0]["scale"] == pytest.approx(3 * t)
    with pytest.raises(adgen.UnsupportedError, match="not yet through aliases"):
        adgen.grad(ModeNet.rescale, mutation=mutation)(ModeNet(), X, 2.0)
