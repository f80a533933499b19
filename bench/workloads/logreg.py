"""Logistic regression: mean cross-entropy of a 1000 x 100 design, gradient wrt the weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import VECTORISED, Workload

torch: Any = None  # bound by the torch adapter

M, D = 1000, 100


def logreg(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def logreg_hand(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    _value = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    return (X.T @ (p - y) / len(y),)


def logreg_torch(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + torch.exp(-z))
    return -torch.mean(y * torch.log(p) + (1.0 - y) * torch.log(1.0 - p))


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    X = rng.standard_normal((M, D))
    w = 0.1 * rng.standard_normal(D)
    y = (rng.random(M) < 0.5).astype(np.float64)
    return w, X, y


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("logreg", VECTORISED, sys.modules[__name__], logreg, (0,), make_args,
                     logreg_hand, torch_port=logreg_torch, size=f"{M} x {D}")]
