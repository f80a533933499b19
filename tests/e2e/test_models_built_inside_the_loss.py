"""A loss that builds its model object itself, the model's ``__init__`` drawing its initial
weights from a generator made from a seed, then sets the parameters it is differentiated by:

    class MLP:
        def __init__(self, sizes, seed=0):
            rng = np.random.default_rng(seed)
            self.W = [rng.normal(size=(a, b)) / np.sqrt(a) for a, b in zip(sizes[:-1], sizes[1:])]

    def loss(W, b, x, y):
        m = MLP([3, 4, 1]); m.W, m.b = W, b; ...

``__init__`` is compiled without a signature, so ``sizes`` might hold floats and the draws
(whose size reads them) got a derivative; their method's receiver, ``rng``, was then taken for
a number because ``np.random.default_rng`` lives in NumPy, and its adjoint was summed with
``+=`` on None: a TypeError from adgen's generated code instead of a gradient. A name bound by
a NumPy call that returns an object (``default_rng``, a class such as ``np.nditer``) is not a
number now. Gradients against central differences under both mutation policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

from tests.e2e.built_inside_models import MLP  # a model module a script imports


def loss(W, b, x, y):
    m = MLP([3, 4, 1])
    m.W, m.b = W, b
    return np.mean((m(x)[:, 0] - y) ** 2)


def loss_of_the_initial_model(scale, x, y):
    m = MLP([3, 4, 1], seed=3)
    return np.mean((scale * m(x)[:, 0] - y) ** 2)


def data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 3))
    init = MLP([3, 4, 1])
    return init.W, init.b, x, np.sin(x[:, 0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_parameters_set_on_a_model_built_in_the_loss(mutation):
    W, b, x, y = data()
    check_grad(loss, (W, b, x, y), argnums=(0, 1), mutation=mutation,
               strict_must_compute=True)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_scale_of_the_model_the_loss_builds(mutation):
    _, _, x, y = data()
    check_grad(loss_of_the_initial_model, (0.7, x, y), mutation=mutation,
               strict_must_compute=True)


def test_jvp_of_the_loss():
    W, b, x, y = data()
    rng = np.random.default_rng(2)
    check_jvp(lambda W0: loss([W0, W[1]], b, x, y), (W[0],), (rng.normal(size=W[0].shape),))
