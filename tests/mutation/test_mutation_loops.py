"""Issue 3, loops and in-place numerics.

Free (right under both policies, no guard, no save): allocate-then-fill (1-D and four nested
loops), running recurrences, ``out=`` scratch buffers, ``np.copyto``, linear stencils updated
in place. Needed (right under "save" with a guarded-save, MutationError naming both lines
under "strict"): a nonlinear stencil in place, an RK2 stepper with preallocated stage buffers,
an in-place softmax with ``np.exp(z, out=z)``, ``p[:] = a @ p``.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import Case, run_case


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- free -------------------------------------------------------------------------------------

def fill_rows(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


def fill_scalars(w, x):
    h = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        h[i] = np.sin(x[i]) * w[i]
    return np.sum(h * h)


def conv2d_naive(img, k):
    oh = img.shape[0] - k.shape[0] + 1
    ow = img.shape[1] - k.shape[1] + 1
    out = np.zeros((oh, ow))
    for i in range(oh):
        for j in range(ow):
            for p in range(k.shape[0]):
                for q in range(k.shape[1]):
                    out[i, j] += img[i + p, j + q] * k[p, q]
    return np.sum(np.tanh(out))


def running_sum(x):
    c = np.empty_like(x)
    c[0] = x[0]
    for i in range(1, x.shape[0]):
        c[i] = c[i - 1] + x[i]
    return np.sum(np.sin(c))


def nonlinear_recurrence(x):
    c = np.empty_like(x)
    c[0] = x[0]
    for i in range(1, x.shape[0]):
        c[i] = np.sin(c[i - 1]) + x[i]
    return np.sum(c * c)


def scratch_out(a, b):
    tmp = np.empty_like(a)
    acc = np.zeros_like(a)
    for k in range(3):
        np.multiply(a, acc + b, out=tmp)
        acc += tmp
        acc *= 0.5
    return np.sum(acc ** 2)


def copyto_buffer(x):
    buf = np.empty_like(x)
    np.copyto(buf, np.sin(x))
    out = buf * 2.0
    np.copyto(buf, np.cos(x))
    return np.sum(out * out) + np.sum(buf * x)


def heat_in_place(u):
    for step in range(3):
        u[1:-1] += 0.2 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    return np.sum(u ** 2)


def gauss_seidel(u):
    v = u.copy()
    for sweep in range(2):
        for i in range(1, v.shape[0] - 1):
            v[i] = 0.5 * v[i] + 0.25 * (v[i - 1] + v[i + 1])
    return np.sum(np.sin(v))


# --- needed -----------------------------------------------------------------------------------

def nonlinear_stencil(u):
    for step in range(2):
        flux = u[1:] * u[:-1]
        u[1:-1] += 0.1 * (flux[1:] - flux[:-1])
    return np.sum(u ** 2)


def rk2(y0):
    y = y0.copy()
    k1 = np.empty_like(y)
    k2 = np.empty_like(y)
    ytmp = np.empty_like(y)
    for step in range(3):
        np.sin(y, out=k1)
        np.multiply(k1, 0.05, out=ytmp)
        ytmp += y
        np.sin(ytmp, out=k2)
        y += 0.1 * k2
    return np.sum(y * y)


def softmax_in_place(x, w):
    z = x - np.max(x)
    np.exp(z, out=z)
    z /= np.sum(z)
    return np.sum(z * w)


def power_iteration(a, p):
    for k in range(3):
        p[:] = a @ p
    return np.sum(p * p)


CASES = [
    Case("allocate_fill_rows", fill_rows,
         lambda: (_rng(10).normal(size=(3, 4)), _rng(11).normal(size=(5, 3))), argnums=(0, 1),
         sites=("h[i] = np.tanh(x[i] @ w)",)),
    Case("allocate_fill_1d", fill_scalars,
         lambda: (_rng(12).normal(size=6), _rng(13).normal(size=6)), argnums=(0, 1),
         sites=("h[i] = np.sin(x[i]) * w[i]",)),
    Case("conv2d_four_loops", conv2d_naive,
         lambda: (_rng(14).normal(size=(5, 5)), _rng(15).normal(size=(2, 2))), argnums=(0, 1),
         sites=("out[i, j] += img[i + p, j + q] * k[p, q]",)),
    Case("running_recurrence", running_sum, lambda: (_rng(16).normal(size=6),),
         sites=("c[i] = c[i - 1] + x[i]", "c[0] = x[0]")),
    # c[i - 1] is read by sin, c[i] is written: no value the pullback reads is overwritten.
    # Whether that is proven statically or by a region-precise guard is the compiler's choice,
    # so only the absence of an error and the gradient are asserted.
    Case("nonlinear_recurrence", nonlinear_recurrence, lambda: (_rng(17).normal(size=6),),
         check_explain=False),
    Case("out_scratch_buffer", scratch_out,
         lambda: (_rng(18).normal(size=5), _rng(19).normal(size=5)), argnums=(0, 1),
         sites=("np.multiply(a, acc + b, out=tmp)", "acc += tmp", "acc *= 0.5")),
    Case("copyto", copyto_buffer, lambda: (_rng(20).normal(size=5),),
         sites=("np.copyto(buf, np.sin(x))", "np.copyto(buf, np.cos(x))")),
    Case("linear_stencil_in_place", heat_in_place, lambda: (_rng(21).normal(size=7),),
         sites=("u[1:-1] += 0.2",)),
    Case("linear_gauss_seidel", gauss_seidel, lambda: (_rng(22).normal(size=7),),
         sites=("v[i] = 0.5 * v[i]",)),
    Case("nonlinear_stencil_in_place", nonlinear_stencil, lambda: (_rng(23).normal(size=7),),
         needed=True, conflicts=(("flux = u[1:] * u[:-1]", "u[1:-1] += 0.1"),),
         guarded=(("u[1:-1] += 0.1",),)),
    Case("rk2_stage_buffers", rk2, lambda: (_rng(24).normal(size=5),), needed=True,
         conflicts=(("np.sin(y, out=k1)", "y += 0.1 * k2"),
                    ("np.sin(ytmp, out=k2)", "np.multiply(k1, 0.05, out=ytmp)")),
         guarded=(("y += 0.1 * k2",), ("np.multiply(k1, 0.05, out=ytmp)",)),
         unguarded=("np.sin(y, out=k1)", "np.sin(ytmp, out=k2)")),
    # exp's pullback reads its output z, which z /= ... overwrites (and the division's own
    # pullback reads z); which of these the compiler reports first is its choice.
    Case("softmax_in_place", softmax_in_place,
         lambda: (_rng(25).normal(size=5), _rng(26).normal(size=5)), argnums=(0, 1),
         needed=True,
         conflicts=(("np.exp(z, out=z)", "z /= np.sum(z)"), ("np.exp(z, out=z)",
                                                             "np.exp(z, out=z)"),
                    ("z /= np.sum(z)", "z /= np.sum(z)")),
         guarded=(("np.exp(z, out=z)", "z /= np.sum(z)"),)),
    Case("p_assign_a_matmul_p", power_iteration,
         lambda: (0.5 * _rng(27).normal(size=(4, 4)), _rng(28).normal(size=4)),
         argnums=(0, 1), needed=True, conflicts=(("p[:] = a @ p", "p[:] = a @ p"),),
         guarded=(("p[:] = a @ p",),)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_loop_case(case: Case, mutation: str, dtype: str) -> None:
    run_case(case, mutation, dtype)
