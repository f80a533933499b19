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
    v1 = np.zeros_like(x)
    np.multiply(x, y, out=v1)
    np.add.at(v1, [0, 2, 2], x[:3])
    v1.sort()
    v1[v1 < 0.0] = 0.0
    v1[[1, 3]] = v1[[3, 1]]
    np.copyto(v1, v1 + (2.0 * y))
    v2 = v1[::2]
    v2 *= 3.0
    v3 = 0.5 * (0.2 * (W @ v1))
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.25 * np.sum(np.sin(v1))
    total = total + 0.75 * np.sum(v2 * v2)
    total = total + 1.5 * np.sum(np.sin(v3))
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = 'out=, add.at, sort, a mask, a fancy swap, copyto and a view update on a fresh buffer: conflict-free'
