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
    if np.sum(y) > 0.0:
        x[[4, 5]] = x[[5, 4]]
        for i in range(1, 5):
            x[i] = np.sin(0.5) + x[i - 1]
        np.multiply(y, x, out=x)
    else:
        x[x < 0.0] = 0.0
    x.fill(0.5)
    v1 = np.sin(x)
    v2 = np.empty_like(x)
    for i in range(6):
        v2[i] = (v1[i] * x[i]) + y[i]
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 775
MAY_NEED = True
CONFLICTS = [([30], [30]), ([33], [30])]  # (write lines, capture lines)
DESCRIPTION = "a for-loop target bound in one if-arm was copied into the next loop's header: UnboundLocalError"
