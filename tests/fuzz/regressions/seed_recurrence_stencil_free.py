import numpy as np


def h_axpy(dst, src):
    dst += 2.0 * src
    return dst


def h_fill(dst, src):
    for i in range(dst.shape[0]):
        dst[i] = 2.0 * src[i]
    return dst


def h_mul(dst, src):
    dst *= src
    return dst


def h_sin(dst, src):
    dst[:] = np.sin(src)
    return dst


def f(x, y, W):
    v1 = np.empty_like(x)
    v1[0] = x[0]
    for i in range(1, 6):
        v1[i] = np.sin(v1[i - 1]) + x[i]
    for i in range(1, 5):
        y[i] = y[i] + (0.1 * np.sin(y[i - 1]))
    v2 = np.empty_like(x)
    for i in range(6):
        v2[i] = v1[i] * y[i]
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.25 * np.sum(np.sin(v1))
    total = total + 0.75 * np.sum(v2 * v2)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = 'a nonlinear recurrence, a left-neighbour nonlinear stencil and a fill loop: conflict-free, so strict must differentiate'
