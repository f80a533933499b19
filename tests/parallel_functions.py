"""Functions for the thread and process tests (tests/test_parallel.py), in a module of their
own so that a spawned worker process can import them by name (pickling by reference).

Each has its gradient written out by hand next to it; the tests also check them against
central differences.
"""

from __future__ import annotations

import numpy as np


def guarded_fill(x):
    y = x * x  # the gradient of this line reads x ...
    x.fill(0.0)  # ... which this overwrites: a guarded write (mutation="save" keeps a copy)
    return np.sum(y) + np.sum(x)


def guarded_fill_grad(x):
    return 2.0 * x  # the filled x is constant: only y = x * x counts


def guarded_shift(x):
    a = x.copy()
    y = np.sin(a)  # reads a
    a[1:] = 5.0 * a[:-1]  # overwrites a: guarded
    return np.sum(y * a)


def guarded_shift_grad(x):
    # f = sum(sin(x) * a_new), a_new[0] = x[0], a_new[i] = 5 x[i-1]
    a_new = np.concatenate([x[:1], 5.0 * x[:-1]])
    g = np.cos(x) * a_new
    g[0] += np.sin(x[0])
    g[:-1] += 5.0 * np.sin(x[1:])
    return g


def scale_in_place(a, c):
    a *= c  # a callee that writes its argument: its callers must know it


def calls_scale(x):
    b = x * x
    scale_in_place(b, 3.0)
    return np.sum(np.sin(b))


def calls_scale_grad(x):
    return np.cos(3.0 * x * x) * 6.0 * x


def series(x, n):
    if n == 0:
        return np.sum(x)
    return np.sum(np.cos(x)) + series(x * 0.5, n - 1)


def calls_series(x):
    return series(np.tanh(x), 3)


def calls_series_grad(x):
    t = np.tanh(x)
    dt = 1.0 - t ** 2
    g = np.zeros_like(x)
    for k in range(3):  # sum(cos(t / 2**k)) for k = 0, 1, 2, then sum(t / 8)
        g += -np.sin(t / 2.0 ** k) / 2.0 ** k
    return (g + 1.0 / 8.0) * dt


def aux_loss(w, x):
    r = x @ w
    return np.sum(r ** 2), r  # has_aux: (value, aux)


def calls_scale_twice(x):
    b = np.cos(x)
    scale_in_place(b, 2.0)
    return np.sum(b * b)


def calls_scale_twice_grad(x):
    return -8.0 * np.cos(x) * np.sin(x)  # sum((2 cos x)^2)
