"""Soft-DTW (Cuturi & Blondel, 2017) on a 60 x 50 cost matrix, filled cell by cell.

Gradient wrt the costs ``C`` (``gamma`` fixed). The dynamic-programming table ``R`` is
written one cell at a time from its three already computed neighbours (a soft minimum); the
hand gradient is the paper's backward recursion (algorithm 2) over the same table, loops kept
(there is no vectorised form). The same kernel is timed under numba by
``bench/experiments/numba_backend.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

ROWS, COLS = 60, 50
QUICK_ROWS, QUICK_COLS = 12, 10
GAMMA = 0.1


def soft_dtw(C, gamma):
    n, m = C.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            softmin = -gamma * (np.log(rsum) + rmax)
            R[i, j] = C[i - 1, j - 1] + softmin
    return R[n, m]


def soft_dtw_hand(C, gamma):
    """Cuturi & Blondel (2017), algorithm 2: the forward table, then the backward one."""
    n, m = C.shape
    R = np.full((n + 2, m + 2), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            R[i, j] = C[i - 1, j - 1] - gamma * (np.log(rsum) + rmax)
    D = np.zeros((n + 2, m + 2))
    D[1:n + 1, 1:m + 1] = C
    E = np.zeros((n + 2, m + 2))
    R[1:n + 1, m + 1] = -np.inf
    R[n + 1, 1:m + 1] = -np.inf
    E[n + 1, m + 1] = 1.0
    R[n + 1, m + 1] = R[n, m]
    for j in range(m, 0, -1):
        for i in range(n, 0, -1):
            a = np.exp((R[i + 1, j] - R[i, j] - D[i + 1, j]) / gamma)
            b = np.exp((R[i, j + 1] - R[i, j] - D[i, j + 1]) / gamma)
            c = np.exp((R[i + 1, j + 1] - R[i, j] - D[i + 1, j + 1]) / gamma)
            E[i, j] = E[i + 1, j] * a + E[i, j + 1] * b + E[i + 1, j + 1] * c
    return E[1:n + 1, 1:m + 1]


def soft_dtw_grad(C, gamma):
    """:func:`soft_dtw_hand` as the workload's one-gradient tuple."""
    return (soft_dtw_hand(C, gamma),)


def soft_dtw_functional(C, gamma):
    """The table as a list of lists (JAX and autograd arrays cannot be written in place)."""
    n, m = C.shape
    R = [[np.inf] * (m + 1) for _ in range(n + 1)]
    R[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1][j - 1] / gamma
            r1 = -R[i - 1][j] / gamma
            r2 = -R[i][j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            softmin = -gamma * (np.log(rsum) + rmax)
            R[i][j] = C[i - 1, j - 1] + softmin
    return R[n][m]


def soft_dtw_torch(C, gamma):
    n, m = C.shape
    R = torch.full((n + 1, m + 1), float("inf"))
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = torch.maximum(torch.maximum(r0, r1), r2)
            rsum = torch.exp(r0 - rmax) + torch.exp(r1 - rmax) + torch.exp(r2 - rmax)
            softmin = -gamma * (torch.log(rsum) + rmax)
            R[i, j] = C[i - 1, j - 1] + softmin
    return R[n, m]


def make(rows: int, cols: int) -> Workload:
    import sys

    def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
        return rng.random((rows, cols)), GAMMA

    return Workload("soft-dtw", LOOP, sys.modules[__name__], soft_dtw, (0,), make_args,
                    soft_dtw_grad, hand_loop=soft_dtw_grad, functional=soft_dtw_functional,
                    torch_port=soft_dtw_torch, size=f"{rows} x {cols} cost matrix, gamma "
                    f"{GAMMA}", loop_iters=rows * cols)


def workloads(quick: bool = False) -> list[Workload]:
    return [make(QUICK_ROWS, QUICK_COLS) if quick else make(ROWS, COLS)]
