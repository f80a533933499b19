"""A 2-layer tanh MLP with softmax cross-entropy: batch 256, 784 -> 256 -> 10.

Gradient wrt all four parameters; the inputs and one-hot labels are data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import VECTORISED, Workload

torch: Any = None  # bound by the torch adapter

B, D_IN, D_HID, D_OUT = 256, 784, 256, 10


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / len(X)


def mlp_hand(W1, b1, W2, b2, X, Y):
    """Backpropagation by hand; uses that each row of Y sums to one."""
    n = len(X)
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z -= np.max(z, axis=1, keepdims=True)
    e = np.exp(z)
    s = np.sum(e, axis=1, keepdims=True)
    _value = -np.sum(Y * (z - np.log(s))) / n
    dz = (e / s - Y) / n
    dW2 = h.T @ dz
    db2 = np.sum(dz, axis=0)
    da = (dz @ W2.T) * (1.0 - h * h)
    dW1 = X.T @ da
    db1 = np.sum(da, axis=0)
    return dW1, db1, dW2, db2


def mlp_torch(W1, b1, W2, b2, X, Y):
    h = torch.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z = z - torch.amax(z, dim=1, keepdim=True)
    logp = z - torch.log(torch.sum(torch.exp(z), dim=1, keepdim=True))
    return -torch.sum(Y * logp) / len(X)


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    W1 = rng.standard_normal((D_IN, D_HID)) / np.sqrt(D_IN)
    b1 = 0.1 * rng.standard_normal(D_HID)
    W2 = rng.standard_normal((D_HID, D_OUT)) / np.sqrt(D_HID)
    b2 = 0.1 * rng.standard_normal(D_OUT)
    X = rng.standard_normal((B, D_IN))
    Y = np.eye(D_OUT)[rng.integers(0, D_OUT, B)]
    return W1, b1, W2, b2, X, Y


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("mlp", VECTORISED, sys.modules[__name__], mlp, (0, 1, 2, 3), make_args,
                     mlp_hand, torch_port=mlp_torch,
                     size=f"batch {B}, {D_IN} -> {D_HID} -> {D_OUT}")]
