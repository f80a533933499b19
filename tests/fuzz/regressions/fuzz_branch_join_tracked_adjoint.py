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
    v1 = np.empty_like(x)
    for i in range(6):
        v1[i] = 0.5 * (2.0 * 0.5)
    if np.sum(x) > 0.0:
        x[x < 0.0] = 0.0
    else:
        np.copyto(x, x)
        x *= 0.5
    v2 = x + (x + v1)
    x.sort()
    y *= x
    np.copyto(y, 2.0 * v2)
    if np.sum(y) > 0.0:
        np.add.at(v2, [0, 0, 2], x[:3])
        v1[4:6] = 2.0
        np.sin(v1, out=v1)
    else:
        x -= 0.2 * (W @ x)
        h_sin(y, x)
        np.copyto(y, 0.2 * (W @ y))
    v3 = v1[3:]
    total = 0.0
    total = total + 1.0 * np.sum(np.sin(x))
    total = total + 0.5 * np.sum(y * y)
    return total


# --- generator metadata (ground truth), not part of the program ---
SEED = 46695
MAY_NEED = True
CONFLICTS = [([36], [36]), ([37], [36]), ([41], [41]), ([43], [36, 43]), ([21, 44], [36]), ([45], [36, 45])]  # (write lines, capture lines)
DESCRIPTION = 'an adjoint in shadow memory was replaced by zeros at a branch join (x -= ... in one arm only)'
