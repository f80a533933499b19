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
    v1 = x
    v2 = x + x
    v3 = 0.2 * (W @ x)
    v4 = x
    v5 = x + x
    v6 = x
    v7 = x
    np.multiply(y, v1, out=x)
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([33], [28, 33])]  # (write lines, capture lines)
DESCRIPTION = 'np.multiply(y, v1, out=x) with v1 = x: the model took v1 = x for a copy and missed that the statement reads what it overwrites'
