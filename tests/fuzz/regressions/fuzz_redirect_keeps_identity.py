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
    v2 = y[::-1]
    x += x
    v3 = x
    x[0] = 0.5
    h_mul(y, v2)
    v2[:] = y
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([16, 31], [16, 31]), ([32], [16, 31])]  # (write lines, capture lines)
DESCRIPTION = "h_mul(v2, y) with v2 = y[::-1], then v2[:] = y: redirecting the callee's saved dst and dst_1 made two objects of one, so 'dst_1 is dst' failed and an adjoint was counted twice (silently wrong)"
