"""A small network trained in plain NumPy, written as ML code is: parameters in a dict,
weight decay on the keys that start with "W", dropout and noise drawn in helpers from a seed
or a generator passed down.

Three calls that carry no derivative were refused: ``k.startswith("W")`` on a dict key
(MissingRuleError "str.startswith has no derivative rule"), ``np.random.default_rng(seed)`` in
a helper given the seed ("a random draw whose parameters carry a gradient": a seed has none)
and ``rng.random(shape)`` in a helper given ``rng`` (the generator is not a parameter of the
draw). They are constants now; a draw in such a helper whose parameters are floats and whose
result has a gradient is still refused, at its line, with the form that works.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def dropout(h, p, seed):
    rng = np.random.default_rng(seed)
    keep = rng.random(h.shape) > p
    return h * keep / (1.0 - p)


def jitter(h, rng, scale):
    return h + scale * rng.standard_normal(h.shape)


def jitter_by_normal(h, rng, scale):
    return h + rng.normal(0.0, scale, h.shape)


def weight_decay(params):
    total = 0.0
    for k in params:
        if k.startswith("W"):
            total += np.sum(params[k] ** 2)
    return total


def mlp_loss(params, x, y, seed, l2):
    h = np.tanh(x @ params["W1"] + params["b1"])
    h = dropout(h, 0.3, seed)
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2) + l2 * weight_decay(params)


def noisy_loss(W, x, rng):
    h = jitter(np.tanh(x @ W), rng, 0.1)
    return np.sum(h ** 2)


def noisy_loss_by_normal(W, x, rng):
    h = jitter_by_normal(np.tanh(x @ W), rng, 0.1)
    return np.sum(h ** 2)


RNG = np.random.default_rng(0)
PARAMS = {"W1": RNG.standard_normal((3, 5)), "b1": 0.1 * RNG.standard_normal(5),
          "W2": RNG.standard_normal((5, 2)), "b2": np.zeros(2)}
X, Y = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))


@pytest.mark.parametrize("mutation", POLICIES)
def test_dropout_from_a_seed_in_a_helper_and_decay_on_w_keys(mutation):
    g = adgen.grad(mlp_loss, mutation=mutation)(PARAMS, X, Y, 7, 0.01)
    assert_grad_close(g, numerical_grad(mlp_loss, (PARAMS, X, Y, 7, 0.01), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_weight_decay_over_keys_starting_with_w(mutation):
    g = adgen.grad(weight_decay, mutation=mutation)(PARAMS)
    assert_grad_close(g, {"W1": 2 * PARAMS["W1"], "b1": np.zeros(5), "W2": 2 * PARAMS["W2"],
                          "b2": np.zeros(2)})


@pytest.mark.parametrize("mutation", POLICIES)
def test_noise_from_a_generator_passed_to_a_helper(mutation):
    W = PARAMS["W1"]
    g = adgen.grad(noisy_loss, mutation=mutation)(W, X, np.random.default_rng(3))
    # the same draws at every evaluation: a generator seeded alike
    expected = numerical_grad(lambda W: noisy_loss(W, X, np.random.default_rng(3)), (W,), 0)
    assert_grad_close(g, expected)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_draw_with_float_parameters_in_such_a_helper_is_refused_at_its_line(mutation):
    with pytest.raises(adgen.MissingRuleError, match=r"Generator\.normal\(\) draws with float "
                       r"parameters") as err:
        adgen.grad(noisy_loss_by_normal, mutation=mutation)(PARAMS["W1"], X,
                                                             np.random.default_rng(3))
    assert "test_numpy_training_loop_helpers.py" in str(err.value)
    assert "rng.normal(0.0, scale, h.shape)" in str(err.value)
    assert "loc + scale * rng.standard_normal(shape)" in str(err.value)
