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
    ix1 = np.array([2, 0, 1])
    v1 = x[ix1]
    ix1[0] = 1
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.25 * np.sum(np.sin(v1))
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([28], [27])]  # (write lines, capture lines)
DESCRIPTION = 'v = x[ix] then ix[0] = 1: the pullback routed the cotangent through the overwritten index (silently wrong; strict did not refuse)'
