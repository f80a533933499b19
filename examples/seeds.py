"""The examples of Zygote's limitation pages, in Python, differentiated by adgen as written.

Each one needed a rewrite or a hand-written rule in Zygote (array mutation, try/catch,
foreign calls, slow loops). Here they are plain code; only the C call needs a rule.
"""

import ctypes
import ctypes.util
import math

import numpy as np

import adgen


def mse(y, y_hat):  # a loop: adgen keeps it a loop, with a tape of what the pullback reads
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - y_hat[i]) ** 2.0
    return s / n


def sum3(array):  # the gradient is one array of zeros with three entries set
    x = array[0]
    y = array[1]
    z = array[2]
    return x + y + z


def addone(a):  # mutates a fresh buffer, not its input: free
    b = np.empty_like(a)
    b[...] = a + 1.0
    return np.sum(b)


def g_inner(x, y):  # mutates its argument and returns it...
    for i in range(len(x)):
        x[i] = 2.0 * y[i]
    return x


def g_outer(y):  # ...and the caller discards the result: the pullback still runs
    z = np.empty_like(y)
    g_inner(z, y)
    return np.sum(z * z)


def fill_after_use(x):  # fill! after x was used: the old x is needed by the gradient of x * x
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def safe_sqrt(x):  # try/except, also when the except arm runs
    try:
        return math.sqrt(x)
    except ValueError:
        return 0.0


# A foreign call: cbrt from the C math library. adgen cannot read C, so it needs a rule.
libm = ctypes.CDLL(ctypes.util.find_library("m") or ctypes.util.find_library("c"))
cbrt = libm.cbrt
cbrt.restype, cbrt.argtypes = ctypes.c_double, [ctypes.c_double]


def cube_roots(x):
    return cbrt(x) + cbrt(8.0 * x)


y, y_hat = np.array([1.0, 2.0, 3.0]), np.array([1.5, 1.0, 3.5])
a = np.array([0.5, -1.0, 2.0, 4.0])

if __name__ == "__main__":
    d_y, d_y_hat = adgen.grad(mse, argnums=(0, 1))(y, y_hat)
    print("d mse / d y =", d_y)
    print("d mse / d y_hat =", d_y_hat)
    print("d sum3 / d a =", adgen.grad(sum3)(a))
    print("d addone / d a =", adgen.grad(addone)(a))
    print("d g_outer / d a =", adgen.grad(g_outer)(a))

    x = a.copy()
    print("d fill_after_use / d a =", adgen.grad(fill_after_use)(x))  # mutation="save"
    print("  x afterwards, as after a plain call:", x)
    try:
        adgen.grad(fill_after_use, mutation="strict")(a.copy())
    except adgen.MutationError as err:
        print("under mutation='strict':\n" + str(err))

    print("d safe_sqrt / d x at 4.0 =", adgen.grad(safe_sqrt)(4.0))
    print("d safe_sqrt / d x at -1.0 =", adgen.grad(safe_sqrt)(-1.0))  # the except arm

    try:
        adgen.grad(cube_roots)(2.0)
    except adgen.MissingRuleError as err:
        print("without a rule:\n" + str(err))

    @adgen.rrule(cbrt)
    def _(x):
        y = cbrt(x)
        return y, lambda y_bar: (y_bar / (3.0 * y * y),)

    # The rule takes effect at the next call: no stale cache, no restart.
    print("d cube_roots / d x at 2.0 =", adgen.grad(cube_roots)(2.0))
