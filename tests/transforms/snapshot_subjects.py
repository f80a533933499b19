"""Functions whose generated source is pinned by tests/transforms/test_snapshots.py."""

import numpy as np


def tanh_square(x):
    return np.sum(np.tanh(x) ** 2)


def allocate_then_fill(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


def fill_after_use(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def mse(y, yhat):
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - yhat[i]) ** 2.0
    return s / n
