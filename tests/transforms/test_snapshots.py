"""Snapshots of generated source, pinned inline (as torch.fx's assertExpectedInline).

A snapshot alone proves nothing, so every pinned function is also run against central
differences here. To regenerate after an intended change of the generated code:

    ADGEN_UPDATE_SNAPSHOTS=1 python -m pytest tests/transforms/test_snapshots.py

which rewrites the expected strings in this file; review the diff before committing.
"""

import os
import re
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from transforms import snapshot_subjects as subjects

UPDATE = os.environ.get("ADGEN_UPDATE_SNAPSHOTS") == "1"
HERE = Path(__file__)


def _normalize(text: str) -> str:
    # the generated code names the user's file in guards; keep the snapshot machine-neutral
    return re.sub(r"'[^']*snapshot_subjects\.py'", "'snapshot_subjects.py'", text).strip()


def assert_snapshot(fn, expected: str, mutation: str = "save") -> None:
    actual = _normalize(adgen.source(fn, mutation=mutation))
    if UPDATE:
        src = HERE.read_text()
        marker = f"SNAP_{fn.__name__.upper()}_{mutation.upper()} = '''"
        start = src.index(marker) + len(marker)
        end = src.index("'''", start)
        HERE.write_text(src[:start] + "\n" + actual + "\n" + src[end:])
        return
    assert actual == expected.strip(), f"generated source changed:\n{actual}"


SNAP_TANH_SQUARE_SAVE = '''
import numpy as np
from adgen.runtime import *


def tanh_square_forward(x):
    t1 = np.tanh(x)
    t2 = t1 ** 2
    return (np.sum(t2), (t1, t2))

def tanh_square_pullback(saved, out_bar, sh=None):
    t1, t2 = saved
    # line 7: return np.sum(np.tanh(x) ** 2)
    t2_bar = sum_vjp(out_bar, np.shape(t2), None, False)
    t1_bar = t2_bar * 2 * t1
    x_bar = t1_bar * (1.0 - t1 * t1)
    return (x_bar,)
'''

SNAP_ALLOCATE_THEN_FILL_SAVE = '''
import numpy as np
from adgen.runtime import *


def allocate_then_fill_forward(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    tape1 = []
    for i in range(x.shape[0]):
        t9 = np.tanh(x[i] @ w)
        h[i] = t9
        tape1.append((i, t9))
    return ((h ** 2).sum(), (h, tape1, w, x))

def allocate_then_fill_pullback(saved, out_bar, sh=None):
    top = sh is None
    if top:
        sh = ShadowMap()
    h, tape1, w, x = saved
    # line 14: return np.sum(h ** 2)
    h_bar = sh.of(h)
    h_bar += out_bar * 2 * h
    # line 12: for i in range(x.shape[0]):
    w_bar = zeros_like(w)
    x_bar = zeros_like(x)
    for i, t9 in reversed(tape1):
        # line 13: h[i] = np.tanh(x[i] @ w)
        t7 = x[i]
        t9_bar = unbroadcast(h_bar[i].copy(), np.shape(t9))
        h_bar[i] = 0.0
        t8_bar = t9_bar * (1.0 - t9 * t9)
        t7_bar = matmul_vjp_a(t8_bar, w, np.shape(t7))
        w_bar = add(w_bar, matmul_vjp_b(t8_bar, t7, np.shape(w)))
        add_item(x_bar, i, t7_bar)
    return (w_bar, x_bar)
'''

SNAP_FILL_AFTER_USE_SAVE = '''
import numpy as np
from adgen.runtime import *


def fill_after_use_forward(x):
    saved_x_1 = capture(x, 'snapshot_subjects.py', 18, 'x')
    y = x * x
    before_write(x, write_region(x, ...), 'save', 'snapshot_subjects.py', 19, 4, 'x.fill(0.0)')
    x[...] = 0.0
    slots_changed_by(x)
    t1 = np.sum(y)
    t2 = np.sum(x)
    return (t1 + t2, (saved_x_1, t1, t2, x, y))

def fill_after_use_pullback(saved, out_bar, sh=None):
    top = sh is None
    if top:
        sh = ShadowMap()
    saved_x_1, t1, t2, x, y = saved
    # line 20: return np.sum(y) + np.sum(x)
    t1_bar = unbroadcast(out_bar, np.shape(t1))
    t2_bar = unbroadcast(out_bar, np.shape(t2))
    x_bar = sh.of(x)
    x_bar += sum_vjp(t2_bar, np.shape(x), None, False)
    y_bar = sum_vjp(t1_bar, np.shape(y), None, False)
    # line 19: x.fill(0.0)
    x_bar[...] = 0.0
    # line 18: y = x * x
    x_bar += unbroadcast(y_bar * saved_x_1.value, np.shape(saved_x_1.value))
    x_bar += unbroadcast(y_bar * saved_x_1.value, np.shape(saved_x_1.value))
    return (sh.value(x) if top else None,)
'''

SNAP_MSE_SAVE = '''
import numpy as np
from adgen.runtime import *


def mse_forward(y, yhat):
    n = len(y)
    s = 0.0
    s_1 = s
    tape1 = []
    for i in range(n):
        t1 = y[i]
        t2 = yhat[i]
        t3 = t1 - t2
        t4 = t3 ** 2.0
        s_2 = s_1
        s_2 += t4
        slots_changed_by(s_2)
        tape1.append((i, s_1, t1, t2, t3, t4))
        s_1 = s_2
    return (s_1 / n, (n, s_1, tape1, y, yhat))

def mse_pullback(saved, out_bar, sh=None):
    n, s_1, tape1, y, yhat = saved
    # line 28: return s / n
    s_1_bar = unbroadcast(out_bar / n, np.shape(s_1))
    # line 26: for i in range(n):
    y_bar = zeros_like(y)
    yhat_bar = zeros_like(yhat)
    for i, s_1, t1, t2, t3, t4 in reversed(tape1):
        # line 26: for i in range(n):
        s_2_bar = s_1_bar
        # line 27: s += (y[i] - yhat[i]) ** 2.0
        s_1_bar = unbroadcast(s_2_bar, np.shape(s_1))
        t4_bar = unbroadcast(s_2_bar, np.shape(t4))
        t3_bar = t4_bar * 2.0 * t3
        t1_bar = unbroadcast(t3_bar, np.shape(t1))
        t2_bar = -unbroadcast(t3_bar, np.shape(t2))
        add_item(yhat_bar, i, t2_bar)
        add_item(y_bar, i, t1_bar)
    return (y_bar, yhat_bar)
'''

CASES = [
    (subjects.tanh_square, "SNAP_TANH_SQUARE_SAVE",
     lambda r: (r.standard_normal(4),)),
    (subjects.allocate_then_fill, "SNAP_ALLOCATE_THEN_FILL_SAVE",
     lambda r: (r.standard_normal((3, 2)), r.standard_normal((4, 3)))),
    (subjects.fill_after_use, "SNAP_FILL_AFTER_USE_SAVE",
     lambda r: (r.standard_normal(3),)),
    (subjects.mse, "SNAP_MSE_SAVE",
     lambda r: (r.standard_normal(5), r.standard_normal(5))),
]


@pytest.mark.parametrize("fn,snap,make", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_generated_source_is_pinned(fn, snap, make):
    assert_snapshot(fn, globals()[snap])


@pytest.mark.parametrize("fn,snap,make", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_pinned_code_computes_the_gradient(fn, snap, make):
    rng = np.random.default_rng(7)
    args = make(rng)
    g = adgen.grad(fn, argnums=0)(*[np.array(a) for a in args])
    assert_grad_close(g, numerical_grad(fn, list(args), 0))


def test_tanh_square_reads_like_a_hand_written_adjoint():
    src = adgen.source(subjects.tanh_square)
    assert "x_bar" in src
    assert "# line" in src and "np.sum(np.tanh(x) ** 2)" in src
    pullback = src[src.index("def tanh_square_pullback"):]
    # no shadow memory, captures or guards for code that mutates nothing
    for helper in ("ShadowMap", "sh.of", "capture", "before_write", "zeros_like"):
        assert helper not in pullback


def test_allocate_then_fill_has_no_guard_and_no_save():
    src = adgen.source(subjects.allocate_then_fill)
    assert "before_write" not in src and "capture(" not in src
    assert all(s.decision == "free" for s in adgen.explain(subjects.allocate_then_fill,
                                                           file=None))
