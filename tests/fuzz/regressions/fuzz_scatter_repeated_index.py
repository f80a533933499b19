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
    ix1 = np.array([0, 0, 0])
    v1 = x[ix1]
    x[ix1] = v1
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = 'x[ix] = v through an index naming x[0] three times: every copy of v got the cotangent of x[0], where NumPy kept only the last write'
