"""A vanilla RNN language model step (min-char-rnn): hidden 64, vocab 32, 25 steps.

The hidden states go into a preallocated buffer, ``hs[t + 1] = tanh(...)`` (allocate-then-fill),
and the next step reads ``hs[t]``: PyTorch's per-storage version counter sees the buffer change
after a read was saved and refuses, though no saved value was overwritten.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

H, V, T = 64, 32, 25


def rnn(Wxh, Whh, Why, bh, by, xs, targets, h0):
    steps = len(xs)
    hs = np.empty((steps + 1, len(h0)))
    hs[0] = h0
    loss = 0.0
    for t in range(steps):
        hs[t + 1] = np.tanh(Wxh @ xs[t] + Whh @ hs[t] + bh)
        y = Why @ hs[t + 1] + by
        y = y - np.max(y)
        loss = loss - np.sum(targets[t] * (y - np.log(np.sum(np.exp(y)))))
    return loss


def rnn_functional(Wxh, Whh, Why, bh, by, xs, targets, h0):
    """The primal with the state buffer replaced by a rebound name (no in-place write)."""
    steps = len(xs)
    h = h0
    loss = 0.0
    for t in range(steps):
        h = np.tanh(Wxh @ xs[t] + Whh @ h + bh)
        y = Why @ h + by
        y = y - np.max(y)
        loss = loss - np.sum(targets[t] * (y - np.log(np.sum(np.exp(y)))))
    return loss


def rnn_hand(Wxh, Whh, Why, bh, by, xs, targets, h0):
    """Only the recurrence is a loop; input and output layers are batched over time."""
    steps = len(xs)
    pre = xs @ Wxh.T + bh
    hs = np.empty((steps + 1, len(h0)))
    hs[0] = h0
    for t in range(steps):
        hs[t + 1] = np.tanh(pre[t] + Whh @ hs[t])
    y = hs[1:] @ Why.T + by
    y -= np.max(y, axis=1, keepdims=True)
    e = np.exp(y)
    s = np.sum(e, axis=1, keepdims=True)
    _value = -np.sum(targets * (y - np.log(s)))
    dy = e / s * np.sum(targets, axis=1, keepdims=True) - targets
    dWhy = dy.T @ hs[1:]
    dby = np.sum(dy, axis=0)
    dh_out = dy @ Why
    draw = np.empty((steps, len(h0)))
    dh_next = np.zeros(len(h0))
    for t in reversed(range(steps)):
        draw[t] = (dh_out[t] + dh_next) * (1.0 - hs[t + 1] ** 2)
        dh_next = Whh.T @ draw[t]
    dWxh = draw.T @ xs
    dWhh = draw.T @ hs[:-1]
    dbh = np.sum(draw, axis=0)
    return dWxh, dWhh, dWhy, dbh, dby


def rnn_hand_loop(Wxh, Whh, Why, bh, by, xs, targets, h0):
    """Karpathy's per-step backward: both passes keep the primal's loop."""
    steps = len(xs)
    hs = np.empty((steps + 1, len(h0)))
    hs[0] = h0
    ps = []
    loss = 0.0
    for t in range(steps):
        hs[t + 1] = np.tanh(Wxh @ xs[t] + Whh @ hs[t] + bh)
        y = Why @ hs[t + 1] + by
        y = y - np.max(y)
        e = np.exp(y)
        s = np.sum(e)
        ps.append(e / s)
        loss = loss - np.sum(targets[t] * (y - np.log(s)))
    dWxh = np.zeros_like(Wxh)
    dWhh = np.zeros_like(Whh)
    dWhy = np.zeros_like(Why)
    dbh = np.zeros_like(bh)
    dby = np.zeros_like(by)
    dh_next = np.zeros(len(h0))
    for t in reversed(range(steps)):
        dy = ps[t] * np.sum(targets[t]) - targets[t]
        dWhy += np.outer(dy, hs[t + 1])
        dby += dy
        dh = Why.T @ dy + dh_next
        draw = (1.0 - hs[t + 1] ** 2) * dh
        dbh += draw
        dWxh += np.outer(draw, xs[t])
        dWhh += np.outer(draw, hs[t])
        dh_next = Whh.T @ draw
    return dWxh, dWhh, dWhy, dbh, dby


def rnn_torch(Wxh, Whh, Why, bh, by, xs, targets, h0):
    steps = len(xs)
    hs = torch.empty((steps + 1, len(h0)), dtype=torch.float64)
    hs[0] = h0
    loss = 0.0
    for t in range(steps):
        hs[t + 1] = torch.tanh(Wxh @ xs[t] + Whh @ hs[t] + bh)
        y = Why @ hs[t + 1] + by
        y = y - torch.max(y)
        loss = loss - torch.sum(targets[t] * (y - torch.log(torch.sum(torch.exp(y)))))
    return loss


def rnn_torch_functional(Wxh, Whh, Why, bh, by, xs, targets, h0):
    steps = len(xs)
    h = h0
    loss = 0.0
    for t in range(steps):
        h = torch.tanh(Wxh @ xs[t] + Whh @ h + bh)
        y = Why @ h + by
        y = y - torch.max(y)
        loss = loss - torch.sum(targets[t] * (y - torch.log(torch.sum(torch.exp(y)))))
    return loss


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    Wxh = 0.1 * rng.standard_normal((H, V))
    Whh = 0.1 * rng.standard_normal((H, H))
    Why = 0.1 * rng.standard_normal((V, H))
    bh = 0.01 * rng.standard_normal(H)
    by = 0.01 * rng.standard_normal(V)
    xs = np.eye(V)[rng.integers(0, V, T)]
    targets = np.eye(V)[rng.integers(0, V, T)]
    h0 = 0.1 * rng.standard_normal(H)
    return Wxh, Whh, Why, bh, by, xs, targets, h0


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("rnn", LOOP, sys.modules[__name__], rnn, (0, 1, 2, 3, 4), make_args,
                     rnn_hand, hand_loop=rnn_hand_loop, functional=rnn_functional,
                     torch_port=rnn_torch, torch_functional=rnn_torch_functional,
                     size=f"hidden {H}, vocab {V}, {T} steps", loop_iters=T)]
