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
    v1 = np.zeros_like(x)
    for k in range(2):
        y += 1.0
        v1[:] = np.sin(y)
    if np.sum(x) > 0.0:
        np.tanh(x, out=v1)
    else:
        y.sort()
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    total = total + 0.25 * np.sum(np.sin(v1))
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([28], [29]), ([33], [29])]  # (write lines, capture lines)
DESCRIPTION = 'captures of one loop iteration overwritten by the next; a branch whose arms capture and write'
