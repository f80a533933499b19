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
    np.add.at(x, [0, 0, 0], x[:3])
    y[:] = np.sin(x)
    v1 = x
    y[:] = x
    v1[:] = x
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = 'x[:] = x (a self-copy) was a false MutationError under strict'
