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
    for i in range(6):
        v1[i] = x[i]
    v2 = np.zeros_like(x)
    np.copyto(x, 0.5 * v2)
    v3 = 0.5 * (v1 * v1)
    v4 = h_sin(y, v3)
    v5 = np.empty_like(x)
    for i in range(6):
        v5[i] = (v3[i] - v4[i]) - (2.0 * v2[i])
    v4[3] = v4[3] + (v3[0] * v1[0])
    x.fill(0.5)
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.25 * np.sum(np.sin(v2))
    total = total + 0.75 * np.sum(v3 * v3)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 46695
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = 'a helper that reads only its src argument made a later write to its dst a false MutationError'
