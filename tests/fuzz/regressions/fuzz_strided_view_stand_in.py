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
    np.sin(x, out=x)
    x[:] = x
    v1 = x[::2]
    h_mul(v1, v1)
    x[x < 0.0] = 0.0
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([26], [26]), ([27], [26]), ([16, 29], [16, 26, 29]), ([30], [16, 26, 29])]  # (write lines, capture lines)
DESCRIPTION = "h_mul(v1, v1) with v1 = x[::2], then a mask write over x: the guard's copy of v1 mapped back onto x with the copy's strides (a silent wrong gradient under save)"
