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
    if np.sum(x) > 0.0:
        x[:] = x
    else:
        x[:] = x
    x = x
    y = x
    v1 = 2.0 * x
    x = 2.0 * x
    x[:] = x
    y -= v1
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = False
CONFLICTS = []  # (write lines, capture lines)
DESCRIPTION = ("y aliases x and y -= v1 (v1 = 2 * x) gives v1 the adjoint -y_bar.copy(); cleanup "
               "moved that negated read past x_bar += ..., which updates the same shadow under "
               "another name, so v1's adjoint included x_1's: a silently wrong gradient under "
               "both policies (cleanup now keeps a .copy() where it is, and moves no read past "
               "an in-place write)")
