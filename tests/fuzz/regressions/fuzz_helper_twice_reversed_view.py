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
    h_sin(x, v1)
    h_sin(x, v1)
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 0
MAY_NEED = True
CONFLICTS = [([21, 27], [21, 27]), ([21, 28], [21, 27, 28])]  # (write lines, capture lines)
DESCRIPTION = ("a helper called twice on x and its reversed view v1 = x[::-1] (h_sin(x, v1) twice): the first call's saved view of x had to be redirected to the copy the second call's guard took of v1, which is not contiguous, and the pullback raised AdgenError ('a callee saved a view that only partly overlaps'); found by the forward fuzzer, which checks jvp against the pullback. The copy is now laid out as v1 lies in memory (guards._laid_out) and stands for that memory in the shadow map")
