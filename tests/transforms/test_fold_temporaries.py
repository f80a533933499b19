"""Single-use temporaries folded back into expressions (transforms/fold_temporaries.py).

Each case is a function in normal form: the folded code must read as expected and do exactly
what the unfolded code did, in the same order -- every call logs itself, and the log, the
result and the arrays' final contents are compared.
"""

from __future__ import annotations

import ast
import textwrap

import gast
import numpy as np
import pytest
from adgen.transforms.emit import to_source
from adgen.transforms.fold_temporaries import fold_temporaries

import adgen


def _tree(src: str) -> gast.FunctionDef:
    return gast.parse(textwrap.dedent(src)).body[0]


def _run(fn: gast.FunctionDef) -> tuple[object, list[object], list[float]]:
    module = gast.gast_to_ast(gast.Module(body=[fn], type_ignores=[]))
    ast.fix_missing_locations(module)
    log: list[object] = []

    def f(tag, value=0.0):
        log.append(tag)
        return value

    def bump(a):
        log.append("bump")
        a[0] += 1.0
        return 10.0

    ns: dict[str, object] = {"np": np, "f": f, "bump": bump}
    exec(compile(module, "<fold>", "exec"), ns)  # noqa: S102
    a = np.array([1.0, 2.0, 3.0])
    out = ns[fn.name](a, np.ones((2, 3)), True)
    return out, log, a.tolist()


def _temporary(n: str) -> bool:
    return n[:1] == "t" and n[1:].isdigit()


CASES = [
    # shapes and items: the chain the normal form makes of one allocation
    ("""
     def g(a, w, c):
         t1 = a.shape
         t2 = t1[0]
         t3 = w.shape
         t4 = t3[1]
         h = np.zeros((t2, t4))
         return h.sum()
     """, ["h = np.zeros((a.shape[0], w.shape[1]))"], []),
    # two calls with effects: the second folds, the first stays ahead of it
    ("""
     def g(a, w, c):
         t1 = f(1)
         t2 = f(2)
         r = (t2, t1)
         return r
     """, ["t1 = f(1)", "r = (f(2), t1)"], []),
    # an element read before the temporary: a call that changes it stays before the read
    ("""
     def g(a, w, c):
         t1 = bump(a)
         r = a[0] + t1
         return r
     """, ["t1 = bump(a)"], []),
    # x[i] += e reads x[i] before e
    ("""
     def g(a, w, c):
         t1 = bump(a)
         a[0] += t1
         return a[0]
     """, ["t1 = bump(a)"], []),
    # a conditionally evaluated part, a repeated test, and a read twice are left alone
    ("""
     def g(a, w, c):
         t1 = f(1, 2.0)
         r = f(3) if c else t1
         t2 = f(4, 0.0)
         while t2 < 1.0:
             t2 = t2 + 1.0
         t3 = f(5, 1.0)
         return r + t3 * t3
     """, ["t1 = f(1, 2.0)", "t3 = f(5, 1.0)"], []),
    # past an empty tape, into a loop's sequence, and not into the loop's body
    ("""
     def g(a, w, c):
         t1 = a.shape
         t2 = t1[0]
         tape = []
         for i in range(t2):
             tape.append(f(i))
         return tape
     """, ["for i in range(a.shape[0]):"], ["t2 ="]),
    ("""
     def g(a, w, c):
         s = 0.0
         t3 = f(7, 2.0)
         for i in range(2):
             s = s + t3
         return s
     """, ["t3 = f(7, 2.0)"], []),
    # a user's own name (not a temporary) stays
    ("""
     def g(a, w, c):
         n = a.shape
         return n[0]
     """, ["n = a.shape"], []),
]


@pytest.mark.parametrize("src, present, absent", CASES)
def test_folded_code_does_the_same_in_the_same_order(src, present, absent):
    before = _run(_tree(src))
    fn = _tree(src)
    fold_temporaries(fn, _temporary)
    text = to_source(fn)
    for line in present:
        assert line in text, text
    for line in absent:
        assert line not in text, text
    assert _run(fn) == before


def test_generated_forward_reads_like_the_users_code():
    def loss(w, x):
        h = np.empty((x.shape[0], w.shape[1]))
        for i in range(x.shape[0]):
            h[i] = np.tanh(x[i] @ w)
        return np.sum(h ** 2)

    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 3))
    src = adgen.source(loss, w, x)
    assert "h = np.empty((x.shape[0], w.shape[1]))" in src
    assert "for i in range(x.shape[0]):" in src
    g = adgen.grad(loss)(w, x)
    eps = 1e-6
    for i in np.ndindex(w.shape):
        up, dn = w.copy(), w.copy()
        up[i] += eps
        dn[i] -= eps
        assert abs(g[i] - (loss(up, x) - loss(dn, x)) / (2 * eps)) < 1e-5
