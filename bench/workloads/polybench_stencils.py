"""Polybench-style stencils and filters with loops over slices (issue 15's kernel set).

``jacobi-1d``, ``jacobi-2d`` (two buffers, slice updates), ``seidel-2d`` (Gauss-Seidel in
place, a 3 x 3 window summed per cell), ``adi`` (alternating-direction implicit: Thomas
solves along columns then rows, vectorised over the other axis) and ``deriche`` (recursive
IIR edge filters, causal and anti-causal, along rows then columns). Each is Polybench's
kernel with its innermost independent loop written as a slice, in place where Polybench
writes in place, and a loss ``sum(out ** 2)``. Gradients wrt the input grid or image.

Every kernel is linear in its input, so each hand adjoint keeps the primal's loops, runs
them backwards and keeps no tape (what the issue's "nothing at all for linear steps" asks of
adgen). The issue's target for this set is the gradient over the primal: at most 4x in
geometric mean and never above 10x.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

SET = "polybench"

J1_N, J1_T = 30, 20
J2_N, J2_T = 20, 10
SEIDEL_N, SEIDEL_T = 12, 2
ADI_N, ADI_T = 20, 5
DERICHE_H, DERICHE_W = 16, 20


def jacobi_1d(A):
    A = A.copy()
    B = A.copy()
    for _ in range(J1_T):
        B[1:-1] = (A[:-2] + A[1:-1] + A[2:]) / 3.0
        A[1:-1] = (B[:-2] + B[1:-1] + B[2:]) / 3.0
    return np.sum(A ** 2)


def jacobi_1d_torch(A):
    A = A.clone()
    B = A.clone()
    for _ in range(J1_T):
        B[1:-1] = (A[:-2] + A[1:-1] + A[2:]) / 3.0
        A[1:-1] = (B[:-2] + B[1:-1] + B[2:]) / 3.0
    return torch.sum(A ** 2)


def jacobi_1d_hand(A):
    A = A.copy()
    B = A.copy()
    for _ in range(J1_T):
        B[1:-1] = (A[:-2] + A[1:-1] + A[2:]) / 3.0
        A[1:-1] = (B[:-2] + B[1:-1] + B[2:]) / 3.0
    A_bar = 2.0 * A
    B_bar = np.zeros_like(B)
    for _ in range(J1_T):
        g = A_bar[1:-1] / 3.0
        A_bar[1:-1] = 0.0
        B_bar[:-2] += g
        B_bar[1:-1] += g
        B_bar[2:] += g
        g = B_bar[1:-1] / 3.0
        B_bar[1:-1] = 0.0
        A_bar[:-2] += g
        A_bar[1:-1] += g
        A_bar[2:] += g
    return (A_bar + B_bar,)


def jacobi_1d_functional(A):
    """Each sweep builds a new array from the unchanged ends and the averaged interior."""
    B = A
    for _ in range(J1_T):
        B = np.concatenate([B[:1], (A[:-2] + A[1:-1] + A[2:]) / 3.0, B[-1:]])
        A = np.concatenate([A[:1], (B[:-2] + B[1:-1] + B[2:]) / 3.0, A[-1:]])
    return np.sum(A ** 2)


def jacobi_2d(A):
    A = A.copy()
    B = A.copy()
    for _ in range(J2_T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])
    return np.sum(A ** 2)


def jacobi_2d_torch(A):
    A = A.clone()
    B = A.clone()
    for _ in range(J2_T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])
    return torch.sum(A ** 2)


def _with_interior(X, inner):
    """X with its interior replaced by ``inner`` (a new array)."""
    middle = np.concatenate([X[1:-1, :1], inner, X[1:-1, -1:]], axis=1)
    return np.concatenate([X[:1], middle, X[-1:]], axis=0)


def jacobi_2d_functional(A):
    B = A
    for _ in range(J2_T):
        B = _with_interior(B, 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                                     + A[:-2, 1:-1]))
        A = _with_interior(A, 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                                     + B[:-2, 1:-1]))
    return np.sum(A ** 2)


def _five_point_adjoint(src_bar, dst_bar):
    """Adjoint of ``dst[1:-1, 1:-1] = 0.2 * (five neighbours of src)``: moves dst's adjoint."""
    g = 0.2 * dst_bar[1:-1, 1:-1]
    dst_bar[1:-1, 1:-1] = 0.0
    src_bar[1:-1, 1:-1] += g
    src_bar[1:-1, :-2] += g
    src_bar[1:-1, 2:] += g
    src_bar[2:, 1:-1] += g
    src_bar[:-2, 1:-1] += g


def jacobi_2d_hand(A):
    A = A.copy()
    B = A.copy()
    for _ in range(J2_T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])
    A_bar = 2.0 * A
    B_bar = np.zeros_like(B)
    for _ in range(J2_T):
        _five_point_adjoint(B_bar, A_bar)
        _five_point_adjoint(A_bar, B_bar)
    return (A_bar + B_bar,)


def seidel_2d(A):
    A = A.copy()
    n = A.shape[0]
    for _ in range(SEIDEL_T):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = np.sum(A[i - 1:i + 2, j - 1:j + 2]) / 9.0
    return np.sum(A ** 2)


def seidel_2d_torch(A):
    A = A.clone()
    n = A.shape[0]
    for _ in range(SEIDEL_T):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = torch.sum(A[i - 1:i + 2, j - 1:j + 2]) / 9.0
    return torch.sum(A ** 2)


def seidel_2d_hand(A):
    A = A.copy()
    n = A.shape[0]
    for _ in range(SEIDEL_T):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = np.sum(A[i - 1:i + 2, j - 1:j + 2]) / 9.0
    A_bar = 2.0 * A
    for _ in range(SEIDEL_T):
        for i in range(n - 2, 0, -1):
            for j in range(n - 2, 0, -1):
                g = A_bar[i, j] / 9.0
                A_bar[i, j] = 0.0
                A_bar[i - 1:i + 2, j - 1:j + 2] += g
    return (A_bar,)


# ADI's constants (Polybench: DX = DY = 1/N, DT = 1/TSTEPS, B1 = 2, B2 = 1)
_MUL1 = 2.0 * (1.0 / ADI_T) / (1.0 / ADI_N) ** 2
_MUL2 = 1.0 * (1.0 / ADI_T) / (1.0 / ADI_N) ** 2
ADI_A, ADI_B, ADI_C = -_MUL1 / 2.0, 1.0 + _MUL1, -_MUL1 / 2.0
ADI_D, ADI_E, ADI_F = -_MUL2 / 2.0, 1.0 + _MUL2, -_MUL2 / 2.0


def adi(u0):
    a, b, c, d, e, f = ADI_A, ADI_B, ADI_C, ADI_D, ADI_E, ADI_F
    n = u0.shape[0]
    u = u0.copy()
    v = np.zeros((n, n))
    p = np.zeros((n, n))
    q = np.zeros((n, n))
    for _ in range(ADI_T):
        # column sweep: a tridiagonal solve per column, all columns at once
        v[0, 1:n - 1] = 1.0
        p[1:n - 1, 0] = 0.0
        q[1:n - 1, 0] = v[0, 1:n - 1]
        for j in range(1, n - 1):
            p[1:n - 1, j] = -c / (a * p[1:n - 1, j - 1] + b)
            q[1:n - 1, j] = (-d * u[j, 0:n - 2] + (1.0 + 2.0 * d) * u[j, 1:n - 1]
                             - f * u[j, 2:n] - a * q[1:n - 1, j - 1]) / (
                                 a * p[1:n - 1, j - 1] + b)
        v[n - 1, 1:n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, 1:n - 1] = p[1:n - 1, j] * v[j + 1, 1:n - 1] + q[1:n - 1, j]
        # row sweep
        u[1:n - 1, 0] = 1.0
        p[1:n - 1, 0] = 0.0
        q[1:n - 1, 0] = u[1:n - 1, 0]
        for j in range(1, n - 1):
            p[1:n - 1, j] = -f / (d * p[1:n - 1, j - 1] + e)
            q[1:n - 1, j] = (-a * v[0:n - 2, j] + (1.0 + 2.0 * a) * v[1:n - 1, j]
                             - c * v[2:n, j] - d * q[1:n - 1, j - 1]) / (
                                 d * p[1:n - 1, j - 1] + e)
        u[1:n - 1, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = p[1:n - 1, j] * u[1:n - 1, j + 1] + q[1:n - 1, j]
    return np.sum(u ** 2)


def adi_hand(u0):
    """ADI is affine in u: the adjoint needs only the (constant) elimination factors p."""
    a, b, c, d, e, f = ADI_A, ADI_B, ADI_C, ADI_D, ADI_E, ADI_F
    n = u0.shape[0]
    u = u0.copy()
    v = np.zeros((n, n))
    q = np.zeros((n, n))
    # p does not depend on u: one column of factors per sweep serves every step
    p_col = np.zeros(n)
    p_row = np.zeros(n)
    for j in range(1, n - 1):
        p_col[j] = -c / (a * p_col[j - 1] + b)
        p_row[j] = -f / (d * p_row[j - 1] + e)
    den_col = a * p_col[:-1] + b  # den_col[j - 1] divides q[:, j]
    den_row = d * p_row[:-1] + e
    for _ in range(ADI_T):
        v[0, 1:n - 1] = 1.0
        q[1:n - 1, 0] = 1.0
        for j in range(1, n - 1):
            q[1:n - 1, j] = (-d * u[j, 0:n - 2] + (1.0 + 2.0 * d) * u[j, 1:n - 1]
                             - f * u[j, 2:n] - a * q[1:n - 1, j - 1]) / den_col[j - 1]
        v[n - 1, 1:n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, 1:n - 1] = p_col[j] * v[j + 1, 1:n - 1] + q[1:n - 1, j]
        u[1:n - 1, 0] = 1.0
        q[1:n - 1, 0] = 1.0
        for j in range(1, n - 1):
            q[1:n - 1, j] = (-a * v[0:n - 2, j] + (1.0 + 2.0 * a) * v[1:n - 1, j]
                             - c * v[2:n, j] - d * q[1:n - 1, j - 1]) / den_row[j - 1]
        u[1:n - 1, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = p_row[j] * u[1:n - 1, j + 1] + q[1:n - 1, j]
    u_bar = 2.0 * u
    v_bar = np.zeros((n, n))
    q_bar = np.zeros((n, n))
    for _ in range(ADI_T):
        # row sweep, backwards: back substitution, then elimination
        for j in range(1, n - 1):
            g = u_bar[1:n - 1, j].copy()
            u_bar[1:n - 1, j] = 0.0
            u_bar[1:n - 1, j + 1] += p_row[j] * g
            q_bar[1:n - 1, j] += g
        u_bar[1:n - 1, n - 1] = 0.0
        for j in range(n - 2, 0, -1):
            h = q_bar[1:n - 1, j] / den_row[j - 1]
            q_bar[1:n - 1, j] = 0.0
            v_bar[0:n - 2, j] -= a * h
            v_bar[1:n - 1, j] += (1.0 + 2.0 * a) * h
            v_bar[2:n, j] -= c * h
            q_bar[1:n - 1, j - 1] -= d * h
        q_bar[1:n - 1, 0] = 0.0  # q[:, 0] = u[:, 0] = 1: constants
        u_bar[1:n - 1, 0] = 0.0
        # column sweep, backwards
        for j in range(1, n - 1):
            g = v_bar[j, 1:n - 1].copy()
            v_bar[j, 1:n - 1] = 0.0
            v_bar[j + 1, 1:n - 1] += p_col[j] * g
            q_bar[1:n - 1, j] += g
        v_bar[n - 1, 1:n - 1] = 0.0
        for j in range(n - 2, 0, -1):
            h = q_bar[1:n - 1, j] / den_col[j - 1]
            q_bar[1:n - 1, j] = 0.0
            u_bar[j, 0:n - 2] -= d * h
            u_bar[j, 1:n - 1] += (1.0 + 2.0 * d) * h
            u_bar[j, 2:n] -= f * h
            q_bar[1:n - 1, j - 1] -= a * h
        q_bar[1:n - 1, 0] = 0.0
        v_bar[0, 1:n - 1] = 0.0
    return (u_bar,)


def _deriche_coefficients(alpha: float = 0.25) -> tuple[float, ...]:
    k = ((1.0 - np.exp(-alpha)) ** 2 / (1.0 + 2.0 * alpha * np.exp(-alpha)
                                        - np.exp(2.0 * alpha)))
    a1 = a5 = k
    a2 = a6 = k * np.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * np.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * np.exp(-2.0 * alpha)
    b1 = 2.0 ** (-alpha)
    b2 = -np.exp(-2.0 * alpha)
    return a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, 1.0, 1.0


A1, A2, A3, A4, A5, A6, A7, A8, B1, B2, C1, C2 = _deriche_coefficients()


def deriche(img):
    h, w = img.shape
    y1 = np.empty((h, w))
    y2 = np.empty((h, w))
    # along rows: causal, then anti-causal (all rows at once)
    xm1 = np.zeros(h)
    ym1 = np.zeros(h)
    ym2 = np.zeros(h)
    for j in range(w):
        y1[:, j] = A1 * img[:, j] + A2 * xm1 + B1 * ym1 + B2 * ym2
        xm1 = img[:, j]
        ym2 = ym1
        ym1 = y1[:, j]
    xp1 = np.zeros(h)
    xp2 = np.zeros(h)
    yp1 = np.zeros(h)
    yp2 = np.zeros(h)
    for j in range(w - 1, -1, -1):
        y2[:, j] = A3 * xp1 + A4 * xp2 + B1 * yp1 + B2 * yp2
        xp2 = xp1
        xp1 = img[:, j]
        yp2 = yp1
        yp1 = y2[:, j]
    out = C1 * (y1 + y2)
    # along columns
    tm1 = np.zeros(w)
    ym1 = np.zeros(w)
    ym2 = np.zeros(w)
    for i in range(h):
        y1[i, :] = A5 * out[i, :] + A6 * tm1 + B1 * ym1 + B2 * ym2
        tm1 = out[i, :]
        ym2 = ym1
        ym1 = y1[i, :]
    tp1 = np.zeros(w)
    tp2 = np.zeros(w)
    yp1 = np.zeros(w)
    yp2 = np.zeros(w)
    for i in range(h - 1, -1, -1):
        y2[i, :] = A7 * tp1 + A8 * tp2 + B1 * yp1 + B2 * yp2
        tp2 = tp1
        tp1 = out[i, :]
        yp2 = yp1
        yp1 = y2[i, :]
    return np.sum((C2 * (y1 + y2)) ** 2)


def deriche_functional(img):
    """The filtered lines go to lists, stacked once a pass is done."""
    h, w = img.shape
    xm1, ym1, ym2 = np.zeros(h), np.zeros(h), np.zeros(h)
    cols1 = []
    for j in range(w):
        y = A1 * img[:, j] + A2 * xm1 + B1 * ym1 + B2 * ym2
        cols1.append(y)
        xm1, ym2, ym1 = img[:, j], ym1, y
    xp1, xp2, yp1, yp2 = np.zeros(h), np.zeros(h), np.zeros(h), np.zeros(h)
    cols2 = []
    for j in range(w - 1, -1, -1):
        y = A3 * xp1 + A4 * xp2 + B1 * yp1 + B2 * yp2
        cols2.append(y)
        xp2, xp1, yp2, yp1 = xp1, img[:, j], yp1, y
    out = C1 * (np.stack(cols1, axis=1) + np.stack(cols2[::-1], axis=1))
    tm1, ym1, ym2 = np.zeros(w), np.zeros(w), np.zeros(w)
    rows1 = []
    for i in range(h):
        y = A5 * out[i, :] + A6 * tm1 + B1 * ym1 + B2 * ym2
        rows1.append(y)
        tm1, ym2, ym1 = out[i, :], ym1, y
    tp1, tp2, yp1, yp2 = np.zeros(w), np.zeros(w), np.zeros(w), np.zeros(w)
    rows2 = []
    for i in range(h - 1, -1, -1):
        y = A7 * tp1 + A8 * tp2 + B1 * yp1 + B2 * yp2
        rows2.append(y)
        tp2, tp1, yp2, yp1 = tp1, out[i, :], yp1, y
    return np.sum((C2 * (np.stack(rows1) + np.stack(rows2[::-1]))) ** 2)


def _causal_adjoint(y_bar, a_now, a_prev):
    """x_bar of ``y[k] = a_now x[k] + a_prev x[k-1] + B1 y[k-1] + B2 y[k-2]`` along axis 0."""
    n = y_bar.shape[0]
    w = np.zeros_like(y_bar)
    x_bar = np.zeros_like(y_bar)
    for k in range(n - 1, -1, -1):
        w[k] = y_bar[k]
        if k + 1 < n:
            w[k] += B1 * w[k + 1]
        if k + 2 < n:
            w[k] += B2 * w[k + 2]
        x_bar[k] += a_now * w[k]
        if k + 1 < n:
            x_bar[k] += a_prev * w[k + 1]
    return x_bar


def _anticausal_adjoint(y_bar, a_next, a_next2):
    """x_bar of ``y[k] = a_next x[k+1] + a_next2 x[k+2] + B1 y[k+1] + B2 y[k+2]``."""
    n = y_bar.shape[0]
    w = np.zeros_like(y_bar)
    x_bar = np.zeros_like(y_bar)
    for k in range(n):
        w[k] = y_bar[k]
        if k >= 1:
            w[k] += B1 * w[k - 1]
            x_bar[k] += a_next * w[k - 1]
        if k >= 2:
            w[k] += B2 * w[k - 2]
            x_bar[k] += a_next2 * w[k - 2]
    return x_bar


def deriche_hand(img):
    """Each IIR pass is linear: its adjoint is the same recursion run the other way."""
    h, w = img.shape
    y1 = np.empty((h, w))
    y2 = np.empty((h, w))
    for j in range(w):
        y1[:, j] = A1 * img[:, j]
        if j >= 1:
            y1[:, j] += A2 * img[:, j - 1] + B1 * y1[:, j - 1]
        if j >= 2:
            y1[:, j] += B2 * y1[:, j - 2]
    for j in range(w - 1, -1, -1):
        y2[:, j] = 0.0
        if j + 1 < w:
            y2[:, j] += A3 * img[:, j + 1] + B1 * y2[:, j + 1]
        if j + 2 < w:
            y2[:, j] += A4 * img[:, j + 2] + B2 * y2[:, j + 2]
    out = C1 * (y1 + y2)
    z1 = np.empty((h, w))
    z2 = np.empty((h, w))
    for i in range(h):
        z1[i] = A5 * out[i]
        if i >= 1:
            z1[i] += A6 * out[i - 1] + B1 * z1[i - 1]
        if i >= 2:
            z1[i] += B2 * z1[i - 2]
    for i in range(h - 1, -1, -1):
        z2[i] = 0.0
        if i + 1 < h:
            z2[i] += A7 * out[i + 1] + B1 * z2[i + 1]
        if i + 2 < h:
            z2[i] += A8 * out[i + 2] + B2 * z2[i + 2]
    res_bar = 2.0 * C2 * C2 * (z1 + z2)  # d sum((C2 (z1 + z2))^2) / d z
    out_bar = (_causal_adjoint(res_bar, A5, A6) + _anticausal_adjoint(res_bar, A7, A8))
    y_bar = C1 * out_bar
    img_bar = (_causal_adjoint(y_bar.T, A1, A2) + _anticausal_adjoint(y_bar.T, A3, A4)).T
    return (img_bar,)


def _grid(n: int):
    def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
        return (rng.random((n, n)),)
    return make_args


def _vector(n: int):
    def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
        return (rng.random(n),)
    return make_args


def _image(rng: np.random.Generator) -> tuple[Any, ...]:
    return (rng.random((DERICHE_H, DERICHE_W)),)


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    module = sys.modules[__name__]
    tags = {"set": SET}
    return [
        Workload("pb-jacobi-1d", LOOP, module, jacobi_1d, (0,), _vector(J1_N), jacobi_1d_hand,
                 hand_loop=jacobi_1d_hand, torch_port=jacobi_1d_torch,
                 functional=jacobi_1d_functional,
                 size=f"n {J1_N}, {J1_T} steps", loop_iters=J1_T,
                 tags=tags),
        Workload("pb-jacobi-2d", LOOP, module, jacobi_2d, (0,), _grid(J2_N), jacobi_2d_hand,
                 hand_loop=jacobi_2d_hand, torch_port=jacobi_2d_torch,
                 functional=jacobi_2d_functional,
                 size=f"{J2_N} x {J2_N}, {J2_T} steps",
                 loop_iters=J2_T, tags=tags),
        Workload("pb-seidel-2d", LOOP, module, seidel_2d, (0,), _grid(SEIDEL_N),
                 seidel_2d_hand, hand_loop=seidel_2d_hand, torch_port=seidel_2d_torch,
                 size=f"{SEIDEL_N} x {SEIDEL_N}, {SEIDEL_T} steps",
                 loop_iters=SEIDEL_T * (SEIDEL_N - 2) ** 2, tags=tags),
        Workload("pb-adi", LOOP, module, adi, (0,), _grid(ADI_N), adi_hand, hand_loop=adi_hand,
                 size=f"{ADI_N} x {ADI_N}, {ADI_T} steps",
                 loop_iters=ADI_T * 4 * (ADI_N - 2), tags=tags),
        Workload("pb-deriche", LOOP, module, deriche, (0,), _image, deriche_hand,
                 hand_loop=deriche_hand, functional=deriche_functional,
                 size=f"{DERICHE_H} x {DERICHE_W} image",
                 loop_iters=2 * (DERICHE_H + DERICHE_W), tags=tags),
    ]
