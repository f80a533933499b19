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
    np.copyto(x, x)
    v1 = x
    v2 = x
    v3 = np.zeros_like(x)
    np.copyto(x, 0.2 * (W @ v1))
    x[x < 0.0] = 0.0
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([30], [30]), ([31], [30])]  # (write lines, capture lines)
DESCRIPTION = "np.copyto(x, 0.2 * (W @ v1)) with v1 = x: W's gradient reads the x being overwritten; the model took v1 = x for a copy"
