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
    v1 = x[::-1]
    h_fill(x, v1)
    v2 = h_axpy(y, y)
    v3 = v2 * x
    h_sin(y, y)
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.25 * np.sum(np.sin(v1))
    total = total + 0.75 * np.sum(v2 * v2)
    total = total + 1.5 * np.sum(np.sin(v3))
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([21, 30], [21, 29, 30])]  # (write lines, capture lines)
DESCRIPTION = "helpers with aliased arguments (a reversed view, the same array twice) and a helper's returned argument captured before h_sin overwrites it"
