"""Single-head self-attention on a 32-token sequence, model width 16: gradient wrt Wq, Wk, Wv.

Vectorised: three projections, scaled scores, a row softmax (shifted by the row maximum) and
the weighted sum of values; the loss is the output's squared norm.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import VECTORISED, Workload

torch: Any = None  # bound by the torch adapter

TOKENS, WIDTH = 32, 16


def attention(Wq, Wk, Wv, X):
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    s = Q @ K.T / np.sqrt(Q.shape[1])
    s = s - np.max(s, axis=1, keepdims=True)
    a = np.exp(s)
    a = a / np.sum(a, axis=1, keepdims=True)
    out = a @ V
    return np.sum(out ** 2)


def attention_hand(Wq, Wk, Wv, X):
    """Backpropagation written out; the max shift gets no gradient (rows of s_bar sum to 0)."""
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    scale = 1.0 / np.sqrt(Q.shape[1])
    s = Q @ K.T * scale
    s -= np.max(s, axis=1, keepdims=True)
    a = np.exp(s)
    a /= np.sum(a, axis=1, keepdims=True)
    out = a @ V
    out_bar = 2.0 * out
    a_bar = out_bar @ V.T
    V_bar = a.T @ out_bar
    s_bar = a * (a_bar - np.sum(a_bar * a, axis=1, keepdims=True))
    s_bar *= scale
    Q_bar = s_bar @ K
    K_bar = s_bar.T @ Q
    return X.T @ Q_bar, X.T @ K_bar, X.T @ V_bar


def attention_torch(Wq, Wk, Wv, X):
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    s = Q @ K.T / Q.shape[1] ** 0.5
    s = s - torch.max(s, dim=1, keepdim=True).values
    a = torch.exp(s)
    a = a / torch.sum(a, dim=1, keepdim=True)
    out = a @ V
    return torch.sum(out ** 2)


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    X = rng.standard_normal((TOKENS, WIDTH))
    Wq, Wk, Wv = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH) for _ in range(3))
    return Wq, Wk, Wv, X


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("attention", VECTORISED, sys.modules[__name__], attention, (0, 1, 2),
                     make_args, attention_hand, torch_port=attention_torch,
                     size=f"{TOKENS} tokens, width {WIDTH}")]
