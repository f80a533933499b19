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
    v1 = np.zeros_like(x)
    np.add.at(x, [0, 0, 0], x[:3])
    v2 = x
    x *= v1
    v3 = x
    v4 = x
    v1.fill(0.5)
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([30], [30]), ([33], [30])]  # (write lines, capture lines)
DESCRIPTION = 'x *= v1 with v1 an inactive array, then v1.fill(0.5): the pullback scaled by v1 as it is, not by its capture (mutation="save" guarded the write and saved v1, but the in-place product read v1 directly)'
