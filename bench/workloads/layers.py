"""A model object holding many layers, stepped in a loop by a method that writes its argument
in place and calls another method of its object (issue 15, session 22).

``Model`` holds ``LAYERS`` layers (an object each: a weight vector and a scale); ``step(u, t)``
decays the state in place and adds ``DT * self.rhs(u, t)``, the right-hand side of layer
``t``. adgen compiles ``Model.step`` for its class; since ``step`` writes ``u`` in place and
hands a container (``self``) to a call, the generated code keeps the slots of ``self`` around
the call (``runtime.items_at``, the whole object graph) and moves adjoints between shadow memory
and the object's adjoint at the call's pullback (``shadows_to_items`` / ``items_to_shadows``):
work in the number of layers at every step. Not in ``MODULES`` (no peer runs a class written
with NumPy): ``python -m bench.experiments.layer_model`` measures it, and
``workloads.load(["layers"])`` loads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

LAYERS, WIDTH, DT, DECAY = 100, 16, 0.1, 0.99


class Layer:
    def __init__(self, w):
        self.w = w
        self.scale = 1.0


class Model:
    def __init__(self, W):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]

    def rhs(self, u, t):
        layer = self.layers[t]
        return layer.scale * np.tanh(layer.w * u)

    def step(self, u, t):
        u *= DECAY
        u += DT * self.rhs(u, t)


def layers(u0, W):
    m = Model(W)
    u = u0.copy()
    for t in range(W.shape[0]):
        m.step(u, t)
    return np.sum(u ** 2)


def layers_hand(u0, W):
    """v_t = DECAY u_t, u_{t+1} = v_t + DT tanh(W_t v_t); the adjoint runs the steps back."""
    n_layers = W.shape[0]
    u = u0.copy()
    v = np.empty_like(W)  # the decayed states
    th = np.empty_like(W)  # tanh's pullback reads its output
    for t in range(n_layers):
        v[t] = DECAY * u
        th[t] = np.tanh(W[t] * v[t])
        u = v[t] + DT * th[t]
    u_bar = 2.0 * u
    W_bar = np.empty_like(W)
    for t in reversed(range(n_layers)):
        g = DT * u_bar * (1.0 - th[t] ** 2)
        W_bar[t] = g * v[t]
        u_bar = DECAY * (u_bar + g * W[t])
    return u_bar, W_bar


def make_args_for(n_layers: int) -> Any:
    def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
        return rng.standard_normal(WIDTH), rng.standard_normal((n_layers, WIDTH))
    return make_args


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    n_layers = 10 if quick else LAYERS
    return [Workload(f"layers-{n_layers}", LOOP, sys.modules[__name__], layers, (0, 1),
                     make_args_for(n_layers), layers_hand, hand_loop=layers_hand,
                     size=f"{n_layers} layer objects of width {WIDTH}, one step each",
                     loop_iters=n_layers)]
