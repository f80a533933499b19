"""Polybench-style linear-algebra kernels with loops over slices (issue 15's kernel set).

``trisolv`` (forward substitution, in place), ``syrk``, ``syr2k``, ``symm``, ``trmm``
(BLAS-3 updates row by row, in place on C or B) and ``durbin`` (Levinson-Durbin recursion).
Each is Polybench's kernel with its innermost loop written as a slice or a dot product, and
a loss ``sum(out ** 2)``; gradients wrt every matrix input.

Two hand gradients each: ``*_hand`` in closed form where the kernel computes a matrix
expression (``syrk``: C' = beta C + alpha tril(A A^T)) and ``*_hand_loop``, the adjoint
keeping the primal's loops (reverse order, one adjoint statement per primal statement). The
inputs they read are never overwritten, so neither keeps a tape, except ``trisolv`` and
``durbin`` whose recursions read their own earlier results. The issue's target for this set
is the gradient over the primal: at most 4x in geometric mean and never above 10x.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

SET = "polybench"

TRISOLV_N = 40
SYRK_N, SYRK_M = 30, 10
SYMM_M, SYMM_N = 20, 24
TRMM_M, TRMM_N = 20, 24
DURBIN_N = 30
ALPHA, BETA = 1.5, 1.2


def trisolv(L, b):
    x = b.copy()
    for i in range(x.shape[0]):
        x[i] -= L[i, :i] @ x[:i]
        x[i] /= L[i, i]
    return np.sum(x ** 2)


def trisolv_torch(L, b):
    x = b.clone()
    for i in range(x.shape[0]):
        x[i] -= L[i, :i] @ x[:i]
        x[i] /= L[i, i]
    return torch.sum(x ** 2)


def trisolv_functional(L, b):
    """x grows by one entry a step (no array written in place)."""
    x = np.zeros(0)
    for i in range(b.shape[0]):
        xi = (b[i] - L[i, :i] @ x) / L[i, i]
        x = np.concatenate([x, np.reshape(xi, (1,))])
    return np.sum(x ** 2)


def trisolv_hand(L, b):
    lower = np.tril(L)  # the kernel reads only the lower triangle
    x = np.linalg.solve(lower, b)
    b_bar = np.linalg.solve(lower.T, 2.0 * x)
    return -np.tril(np.outer(b_bar, x)), b_bar


def trisolv_hand_loop(L, b):
    x = b.copy()
    for i in range(x.shape[0]):
        x[i] -= L[i, :i] @ x[:i]
        x[i] /= L[i, i]
    x_bar = 2.0 * x
    L_bar = np.zeros_like(L)
    for i in range(x.shape[0] - 1, -1, -1):
        # x[i] /= L[i, i]  (x[i] now holds the quotient)
        L_bar[i, i] -= x_bar[i] * x[i] / L[i, i]
        x_bar[i] /= L[i, i]
        # x[i] -= L[i, :i] @ x[:i]
        L_bar[i, :i] -= x_bar[i] * x[:i]
        x_bar[:i] -= x_bar[i] * L[i, :i]
    return L_bar, x_bar


def syrk(A, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= BETA
        for k in range(A.shape[1]):
            C[i, :i + 1] += ALPHA * A[i, k] * A[:i + 1, k]
    return np.sum(C ** 2)


def syrk_torch(A, C):
    C = C.clone()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= BETA
        for k in range(A.shape[1]):
            C[i, :i + 1] += ALPHA * A[i, k] * A[:i + 1, k]
    return torch.sum(C ** 2)


def syrk_functional(A, C):
    """Each row of C is rebuilt once and kept in a list, stacked at the end."""
    rows = []
    for i in range(C.shape[0]):
        row = BETA * C[i, :i + 1]
        for k in range(A.shape[1]):
            row = row + ALPHA * A[i, k] * A[:i + 1, k]
        rows.append(np.concatenate([row, C[i, i + 1:]]))
    return np.sum(np.stack(rows) ** 2)


def syrk_hand(A, C):
    out = np.triu(C, 1) + np.tril(BETA * C + ALPHA * A @ A.T)
    out_bar = 2.0 * out
    lower = np.tril(out_bar)
    return ALPHA * (lower + lower.T) @ A, BETA * lower + np.triu(out_bar, 1)


def syrk_hand_loop(A, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= BETA
        for k in range(A.shape[1]):
            C[i, :i + 1] += ALPHA * A[i, k] * A[:i + 1, k]
    C_bar = 2.0 * C
    A_bar = np.zeros_like(A)
    for i in range(C.shape[0] - 1, -1, -1):
        g = C_bar[i, :i + 1]
        for k in range(A.shape[1] - 1, -1, -1):
            A_bar[i, k] += ALPHA * (g @ A[:i + 1, k])
            A_bar[:i + 1, k] += ALPHA * A[i, k] * g
        C_bar[i, :i + 1] *= BETA
    return A_bar, C_bar


def syr2k(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= BETA
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * ALPHA * B[i, k] + B[:i + 1, k] * ALPHA * A[i, k]
    return np.sum(C ** 2)


def syr2k_torch(A, B, C):
    C = C.clone()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= BETA
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * ALPHA * B[i, k] + B[:i + 1, k] * ALPHA * A[i, k]
    return torch.sum(C ** 2)


def syr2k_functional(A, B, C):
    rows = []
    for i in range(C.shape[0]):
        row = BETA * C[i, :i + 1]
        for k in range(A.shape[1]):
            row = row + A[:i + 1, k] * ALPHA * B[i, k] + B[:i + 1, k] * ALPHA * A[i, k]
        rows.append(np.concatenate([row, C[i, i + 1:]]))
    return np.sum(np.stack(rows) ** 2)


def syr2k_hand(A, B, C):
    out = np.triu(C, 1) + np.tril(BETA * C + ALPHA * (A @ B.T + B @ A.T))
    out_bar = 2.0 * out
    lower = np.tril(out_bar)
    sym = lower + lower.T
    return ALPHA * sym @ B, ALPHA * sym @ A, BETA * lower + np.triu(out_bar, 1)


def syr2k_hand_loop(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= BETA
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * ALPHA * B[i, k] + B[:i + 1, k] * ALPHA * A[i, k]
    C_bar = 2.0 * C
    A_bar = np.zeros_like(A)
    B_bar = np.zeros_like(B)
    for i in range(C.shape[0] - 1, -1, -1):
        g = ALPHA * C_bar[i, :i + 1]
        for k in range(A.shape[1] - 1, -1, -1):
            A_bar[:i + 1, k] += B[i, k] * g
            B_bar[i, k] += g @ A[:i + 1, k]
            B_bar[:i + 1, k] += A[i, k] * g
            A_bar[i, k] += g @ B[:i + 1, k]
        C_bar[i, :i + 1] *= BETA
    return A_bar, B_bar, C_bar


def symm(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[:i, :] += ALPHA * np.outer(A[i, :i], B[i, :])
        temp2 = A[i, :i] @ B[:i, :]
        C[i, :] = BETA * C[i, :] + ALPHA * B[i, :] * A[i, i] + ALPHA * temp2
    return np.sum(C ** 2)


def symm_torch(A, B, C):
    C = C.clone()
    for i in range(C.shape[0]):
        C[:i, :] += ALPHA * torch.outer(A[i, :i], B[i, :])
        temp2 = A[i, :i] @ B[:i, :]
        C[i, :] = BETA * C[i, :] + ALPHA * B[i, :] * A[i, i] + ALPHA * temp2
    return torch.sum(C ** 2)


def symm_hand(A, B, C):
    """C' = beta C + alpha S B, S the symmetric matrix of A's lower triangle."""
    S = np.tril(A, -1) + np.tril(A, -1).T + np.diag(np.diag(A))
    out_bar = 2.0 * (BETA * C + ALPHA * S @ B)
    S_bar = ALPHA * out_bar @ B.T
    A_bar = np.tril(S_bar + S_bar.T, -1) + np.diag(np.diag(S_bar))
    return A_bar, ALPHA * S @ out_bar, BETA * out_bar


def symm_hand_loop(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[:i, :] += ALPHA * np.outer(A[i, :i], B[i, :])
        temp2 = A[i, :i] @ B[:i, :]
        C[i, :] = BETA * C[i, :] + ALPHA * B[i, :] * A[i, i] + ALPHA * temp2
    C_bar = 2.0 * C
    A_bar = np.zeros_like(A)
    B_bar = np.zeros_like(B)
    for i in range(C.shape[0] - 1, -1, -1):
        g = C_bar[i, :].copy()
        C_bar[i, :] = BETA * g
        B_bar[i, :] += ALPHA * A[i, i] * g
        A_bar[i, i] += ALPHA * (B[i, :] @ g)
        temp2_bar = ALPHA * g
        A_bar[i, :i] += B[:i, :] @ temp2_bar
        B_bar[:i, :] += np.outer(A[i, :i], temp2_bar)
        A_bar[i, :i] += ALPHA * (C_bar[:i, :] @ B[i, :])
        B_bar[i, :] += ALPHA * (A[i, :i] @ C_bar[:i, :])
    return A_bar, B_bar, C_bar


def trmm(A, B):
    B = B.copy()
    for i in range(B.shape[0]):
        B[i, :] += A[i + 1:, i] @ B[i + 1:, :]
        B[i, :] *= ALPHA
    return np.sum(B ** 2)


def trmm_torch(A, B):
    B = B.clone()
    for i in range(B.shape[0]):
        B[i, :] += A[i + 1:, i] @ B[i + 1:, :]
        B[i, :] *= ALPHA
    return torch.sum(B ** 2)


def trmm_functional(A, B):
    """Row i reads the rows below it as they were: the input's."""
    rows = []
    for i in range(B.shape[0]):
        rows.append(ALPHA * (B[i, :] + A[i + 1:, i] @ B[i + 1:, :]))
    return np.sum(np.stack(rows) ** 2)


def trmm_hand(A, B):
    """B' = alpha (I + tril(A, -1)^T) B."""
    U = np.eye(A.shape[0]) + np.tril(A, -1).T
    out_bar = 2.0 * ALPHA * U @ B
    U_bar = ALPHA * out_bar @ B.T
    return np.tril(U_bar.T, -1), ALPHA * U.T @ out_bar


def trmm_hand_loop(A, B):
    B_in = B
    B = B.copy()
    for i in range(B.shape[0]):
        B[i, :] += A[i + 1:, i] @ B[i + 1:, :]
        B[i, :] *= ALPHA
    B_bar = 2.0 * B
    A_bar = np.zeros_like(A)
    for i in range(B.shape[0] - 1, -1, -1):
        B_bar[i, :] *= ALPHA
        # rows below i still held the input when row i was updated
        A_bar[i + 1:, i] += B_in[i + 1:, :] @ B_bar[i, :]
        B_bar[i + 1:, :] += np.outer(A[i + 1:, i], B_bar[i, :])
    return A_bar, B_bar


def durbin(r):
    n = r.shape[0]
    y = np.zeros(n)
    z = np.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = r[:k][::-1] @ y[:k]
        alpha = -(r[k] + s) / beta
        z[:k] = y[:k] + alpha * y[:k][::-1]
        y[:k] = z[:k]
        y[k] = alpha
    return np.sum(y ** 2)


def durbin_torch(r):
    n = r.shape[0]
    y = torch.zeros(n)
    z = torch.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = torch.flip(r[:k], (0,)) @ y[:k]
        alpha = -(r[k] + s) / beta
        z[:k] = y[:k] + alpha * torch.flip(y[:k], (0,))
        y[:k] = z[:k]
        y[k] = alpha
    return torch.sum(y ** 2)


def durbin_functional(r):
    """y is rebuilt each step, one entry longer."""
    y = -r[:1]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, r.shape[0]):
        beta = (1.0 - alpha * alpha) * beta
        s = r[:k][::-1] @ y
        alpha = -(r[k] + s) / beta
        y = np.concatenate([y + alpha * y[::-1], np.reshape(alpha, (1,))])
    return np.sum(y ** 2)


def durbin_hand(r):
    """The recursion's adjoint, step by step backwards, from a tape of y, alpha and beta."""
    n = r.shape[0]
    y = np.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    ys = np.empty((n, n))  # ys[k, :k]: y before step k
    alphas = np.empty(n)  # alpha before step k
    betas = np.empty(n)  # beta before step k
    sums = np.empty(n)
    for k in range(1, n):
        ys[k, :k] = y[:k]
        alphas[k], betas[k] = alpha, beta
        beta = (1.0 - alpha * alpha) * beta
        s = r[:k][::-1] @ y[:k]
        sums[k] = s
        alpha = -(r[k] + s) / beta
        y[:k] = y[:k] + alpha * y[:k][::-1]
        y[k] = alpha
    y_bar = 2.0 * y
    r_bar = np.zeros(n)
    alpha_bar = 0.0
    beta_bar = 0.0
    for k in range(n - 1, 0, -1):
        y_old = ys[k, :k]
        alpha_old, beta_old = alphas[k], betas[k]
        beta_k = (1.0 - alpha_old * alpha_old) * beta_old
        alpha_k = -(r[k] + sums[k]) / beta_k
        alpha_bar += y_bar[k]
        y_bar[k] = 0.0
        g = y_bar[:k].copy()
        alpha_bar += g @ y_old[::-1]
        y_bar[:k] = g + alpha_k * g[::-1]
        s_bar = -alpha_bar / beta_k
        r_bar[k] += s_bar
        beta_bar += alpha_bar * (r[k] + sums[k]) / beta_k ** 2
        r_bar[:k] += y_old[::-1] * s_bar
        y_bar[:k] += r[:k][::-1] * s_bar
        alpha_bar = -2.0 * alpha_old * beta_old * beta_bar
        beta_bar = (1.0 - alpha_old * alpha_old) * beta_bar
    r_bar[0] -= y_bar[0] + alpha_bar
    return (r_bar,)


def _matrices(*shapes: tuple[int, int], lower_dominant: bool = False):
    def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
        out = [rng.random(shape) for shape in shapes]
        if lower_dominant:  # a well-conditioned triangular solve
            out[0] = out[0] + shapes[0][0] * np.eye(shapes[0][0])
        return tuple(out)
    return make_args


def _trisolv_args(rng: np.random.Generator) -> tuple[Any, ...]:
    L = rng.random((TRISOLV_N, TRISOLV_N)) / TRISOLV_N + np.eye(TRISOLV_N)
    return L, rng.random(TRISOLV_N)


def _durbin_args(rng: np.random.Generator) -> tuple[Any, ...]:
    # autocorrelations of an AR(1) process, perturbed: every reflection coefficient |alpha| < 1
    k = np.arange(1, DURBIN_N + 1)
    return (0.6 ** k + 0.01 * rng.standard_normal(DURBIN_N),)


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    module = sys.modules[__name__]
    tags = {"set": SET}
    return [
        Workload("pb-trisolv", LOOP, module, trisolv, (0, 1), _trisolv_args, trisolv_hand,
                 hand_loop=trisolv_hand_loop, torch_port=trisolv_torch,
                 functional=trisolv_functional, size=f"n {TRISOLV_N}", loop_iters=TRISOLV_N,
                 tags=tags),
        Workload("pb-syrk", LOOP, module, syrk, (0, 1),
                 _matrices((SYRK_N, SYRK_M), (SYRK_N, SYRK_N)), syrk_hand,
                 hand_loop=syrk_hand_loop, torch_port=syrk_torch,
                 functional=syrk_functional, size=f"n {SYRK_N}, m {SYRK_M}",
                 loop_iters=SYRK_N * SYRK_M, tags=tags),
        Workload("pb-syr2k", LOOP, module, syr2k, (0, 1, 2),
                 _matrices((SYRK_N, SYRK_M), (SYRK_N, SYRK_M), (SYRK_N, SYRK_N)), syr2k_hand,
                 hand_loop=syr2k_hand_loop, torch_port=syr2k_torch,
                 functional=syr2k_functional, size=f"n {SYRK_N}, m {SYRK_M}",
                 loop_iters=SYRK_N * SYRK_M, tags=tags),
        Workload("pb-symm", LOOP, module, symm, (0, 1, 2),
                 _matrices((SYMM_M, SYMM_M), (SYMM_M, SYMM_N), (SYMM_M, SYMM_N)), symm_hand,
                 hand_loop=symm_hand_loop, torch_port=symm_torch,
                 size=f"m {SYMM_M}, n {SYMM_N}", loop_iters=SYMM_M,
                 tags=tags),
        Workload("pb-trmm", LOOP, module, trmm, (0, 1),
                 _matrices((TRMM_M, TRMM_M), (TRMM_M, TRMM_N)), trmm_hand,
                 hand_loop=trmm_hand_loop, torch_port=trmm_torch,
                 functional=trmm_functional, size=f"m {TRMM_M}, n {TRMM_N}", loop_iters=TRMM_M,
                 tags=tags),
        Workload("pb-durbin", LOOP, module, durbin, (0,), _durbin_args, durbin_hand,
                 hand_loop=durbin_hand, torch_port=durbin_torch,
                 functional=durbin_functional, size=f"n {DURBIN_N}", loop_iters=DURBIN_N,
                 tags=tags),
    ]
