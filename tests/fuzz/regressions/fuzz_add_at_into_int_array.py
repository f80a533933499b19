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
    v2 = np.zeros(3, dtype=np.int64)
    np.add.at(v2, [0, 2, 0], 3.0 * x[:3])
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.75 * np.sum(v2 * v2)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 8182
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = "np.add.at into an int64 array passed the gradient of the added floats through (they are truncated: zero); found by the reverse-over-reverse fuzzer"
