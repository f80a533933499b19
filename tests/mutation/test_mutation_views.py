"""Issue 3, views and aliasing (design §2.5, §2.7).

Writes through views, aliased arguments of a helper, boolean-mask and fancy-index writes,
``sort``, ``np.add.at``, ``np.clip(..., out=)`` and region precision. Most forms come as a free
case and a "needed" twin in which a nonlinear op captured the buffer before the write.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import Case, run_case


def _vec(seed: int, n: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n)


# --- writing through a view -------------------------------------------------------------------

def view_write(x):
    y = np.sin(x)
    v = y[::2]
    v *= 3.0
    return np.sum(y * y)


def view_write_captured(x):
    y = 2.0 * x
    z = y * y
    v = y[::2]
    v *= 3.0
    return np.sum(z) + np.sum(np.sin(y))


def slice_zero_captured(x):
    y = 1.5 * x
    z = y * y
    y[1:4] = 0.0
    return np.sum(z) + np.sum(np.sin(y))


# --- one array passed as two arguments --------------------------------------------------------

def _add_twice(dst, src):
    dst += 2.0 * src


def _sin_into(dst, src):
    dst[:] = np.sin(src)


def alias_linear(y):
    _add_twice(y, y)
    return np.sum(y * y)


def alias_nonlinear(y):
    _sin_into(y, y)
    return np.sum(y * y)


def no_alias_nonlinear(y):
    z = np.empty_like(y)
    _sin_into(z, y)
    return np.sum(z * z) + np.sum(y)


# --- masks, fancy indices, sort, add.at, clip -------------------------------------------------

def relu_mask(x, w):
    h = x @ w
    h[h < 0] = 0.0
    return np.sum(np.sin(h) + h * h)


def relu_mask_captured(x, w):
    h = x @ w
    s = h * h
    h[h < 0] = 0.0
    return np.sum(s) + np.sum(np.sin(h))


def fancy_swap_input(x):
    x[[0, 1]] = x[[1, 0]]
    return np.sum(np.sin(x) * np.arange(1.0, 7.0))


def fancy_swap_captured(x):
    y = 2.0 * x
    z = y * y
    y[[0, 1]] = y[[1, 0]]
    return np.sum(z * np.arange(1.0, 7.0)) + np.sum(np.sin(y) * np.arange(1.0, 7.0))


def sort_in_place(x):
    y = 2.0 * x + 1.0
    y.sort()
    return np.sum(np.sin(y) * np.arange(1.0, 7.0))


def sort_captured(x):
    y = 2.0 * x + 1.0
    z = y * y
    y.sort()
    return np.sum(z * np.arange(1.0, 7.0)) + np.sum(y * np.arange(1.0, 7.0))


def add_at(x):
    y = np.zeros(4)
    np.add.at(y, [0, 2, 2, 3], np.sin(x[:4]))
    return np.sum(y * y)


def add_at_captured(x):
    y = np.cos(x)
    z = y * y
    np.add.at(y, [0, 2, 2, 3], x[:4])
    return np.sum(z) + np.sum(y * y)


def clip_out(x):
    y = 3.0 * x
    np.clip(x, -0.5, 0.5, out=y)
    return np.sum(np.sin(y) * x)


def clip_out_captured(x):
    y = 3.0 * x
    z = np.sin(y) * y
    np.clip(x, -0.5, 0.5, out=y)
    return np.sum(z) + np.sum(y * y)


# --- region precision: x[0] written after x[3:] was captured ----------------------------------

def region_precise(x):
    z = np.sin(x[3:])
    x[0] = 5.0
    return np.sum(z) + np.sum(x * x)


CASES = [
    Case("view_write", view_write, lambda: (_vec(30),), sites=("v *= 3.0",)),
    Case("view_write_captured", view_write_captured, lambda: (_vec(31),), needed=True,
         conflicts=(("z = y * y", "v *= 3.0"),), guarded=(("v *= 3.0",),)),
    Case("slice_zero_after_capture", slice_zero_captured, lambda: (_vec(32),), needed=True,
         conflicts=(("z = y * y", "y[1:4] = 0.0"),), guarded=(("y[1:4] = 0.0",),)),
    Case("alias_args_linear", alias_linear, lambda: (_vec(33),),
         sites=((_add_twice, "dst += 2.0 * src"),), forced=("_add_twice(y, y)",)),
    # sin reads src, which is dst: the write overwrites its own input. An interprocedural
    # compiler may name the helper's line or the call's line, for either role.
    Case("alias_args_nonlinear", alias_nonlinear, lambda: (_vec(34),), needed=True,
         conflicts=tuple((c, o) for c in ((_sin_into, "dst[:] = np.sin(src)"), "_sin_into(y, y)")
                         for o in ((_sin_into, "dst[:] = np.sin(src)"), "_sin_into(y, y)")),
         guarded=(((_sin_into, "dst[:] = np.sin(src)"), "_sin_into(y, y)"),)),
    # The same helper without aliasing: a guard inside it is allowed (the parameters may alias
    # in general), but it must not fire, under either policy.
    Case("no_alias_nonlinear", no_alias_nonlinear, lambda: (_vec(35),), check_explain=False),
    Case("relu_mask", relu_mask,
         lambda: (_vec(36, 12).reshape(4, 3), _vec(37, 15).reshape(3, 5)), argnums=(0, 1),
         sites=("h[h < 0] = 0.0",)),
    Case("relu_mask_captured", relu_mask_captured,
         lambda: (_vec(38, 12).reshape(4, 3), _vec(39, 15).reshape(3, 5)), argnums=(0, 1),
         needed=True, conflicts=(("s = h * h", "h[h < 0] = 0.0"),),
         guarded=(("h[h < 0] = 0.0",),)),
    Case("fancy_swap_input", fancy_swap_input, lambda: (_vec(40),),
         sites=("x[[0, 1]] = x[[1, 0]]",)),
    Case("fancy_swap_captured", fancy_swap_captured, lambda: (_vec(41),), needed=True,
         conflicts=(("z = y * y", "y[[0, 1]] = y[[1, 0]]"),),
         guarded=(("y[[0, 1]] = y[[1, 0]]",),)),
    Case("sort", sort_in_place, lambda: (_vec(42),), sites=("y.sort()",)),
    Case("sort_captured", sort_captured, lambda: (_vec(43),), needed=True,
         conflicts=(("z = y * y", "y.sort()"),), guarded=(("y.sort()",),)),
    Case("add_at", add_at, lambda: (_vec(44),), sites=("np.add.at(y",)),
    Case("add_at_captured", add_at_captured, lambda: (_vec(45),), needed=True,
         conflicts=(("z = y * y", "np.add.at(y"),), guarded=(("np.add.at(y",),)),
    Case("clip_out", clip_out, lambda: (_vec(46),), sites=("np.clip(x, -0.5, 0.5, out=y)",)),
    Case("clip_out_captured", clip_out_captured, lambda: (_vec(47),), needed=True,
         conflicts=(("z = np.sin(y) * y", "np.clip(x, -0.5, 0.5, out=y)"),),
         guarded=(("np.clip(x, -0.5, 0.5, out=y)",),)),
    Case("region_precise", region_precise, lambda: (_vec(48),), sites=("x[0] = 5.0",)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_view_case(case: Case, mutation: str, dtype: str) -> None:
    run_case(case, mutation, dtype)
