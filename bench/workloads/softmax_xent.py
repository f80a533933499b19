"""Softmax cross-entropy of a linear classifier, stabilised in place: 128 x 64 -> 10 classes.

The primal shifts the logits by their row maximum and exponentiates them in the same buffer
(``z -= z.max(axis=1, keepdims=True)``; ``np.exp(z, out=z)``), as numerically careful NumPy
code does. The shift does not change the softmax, so its gradient cancels exactly; the
``exp`` pullback reads its output, which is the buffer itself (nothing overwrites it later).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import VECTORISED, Workload

torch: Any = None  # bound by the torch adapter

BATCH, FEATURES, CLASSES = 128, 64, 10


def softmax_xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def softmax_xent_functional(W, X, Y):
    z = X @ W
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def softmax_xent_hand(W, X, Y):
    """The textbook gradient X^T (softmax - Y) / n (the shift's contribution is zero)."""
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= np.sum(z, axis=1, keepdims=True)
    z -= Y  # rows of Y sum to one
    return (X.T @ z / X.shape[0],)


def softmax_xent_torch(W, X, Y):
    z = X @ W
    z -= z.max(dim=1, keepdim=True).values
    z.exp_()
    p = z / torch.sum(z, dim=1, keepdim=True)
    return -torch.sum(Y * torch.log(p)) / X.shape[0]


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    W = 0.1 * rng.standard_normal((FEATURES, CLASSES))
    X = rng.standard_normal((BATCH, FEATURES))
    Y = np.eye(CLASSES)[rng.integers(0, CLASSES, BATCH)]
    return W, X, Y


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("softmax-xent", VECTORISED, sys.modules[__name__], softmax_xent, (0,),
                     make_args, softmax_xent_hand, functional=softmax_xent_functional,
                     torch_port=softmax_xent_torch,
                     size=f"batch {BATCH}, {FEATURES} features, {CLASSES} classes")]
