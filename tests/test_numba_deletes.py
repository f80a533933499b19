"""The numba rewrite drops ``del name`` statements (a pullback releasing an adjoint it no
longer reads): numba's nopython mode compiles no ``del`` of a local ("Illegal IR, del
found"), so a pullback that releases its arrays early would be refused whole. A user's
``del`` is refused earlier, by the default pipeline. Skipped without numba."""

from __future__ import annotations

import gast
import numpy as np
import pytest

numba = pytest.importorskip("numba")

FORWARD = '''
def scaled_forward(x, w):
    t = x * w
    out_value = (t * t).sum()
    return (out_value, (t, w))
'''

PULLBACK = '''
def scaled_pullback(saved, out_bar):
    t, w = saved
    t_bar = 2.0 * out_bar * t
    x_bar = t_bar * w
    w_bar = (t_bar * t).sum() / w
    del t_bar
    if w > 0.0:
        del t
    return (x_bar, w_bar)
'''


def test_a_pullback_releasing_its_adjoints_compiles():
    from adgen.transforms.analyses.numba_types import ArgType
    from adgen.transforms.numba_module import to_nopython

    from adgen import runtime

    fwd = gast.parse(FORWARD).body[0]
    pb = gast.parse(PULLBACK).body[0]
    code = to_nopython(fwd, pb, "<test>", {"x": ArgType("array", "f8", 1), "w": ArgType("f8")},
                       set(runtime.__all__))
    assert "del " not in code.source and code.gradient
    ns: dict = {}
    exec(compile(code.source, "<test numba module>", "exec"), ns)  # noqa: S102
    for name in (code.forward, code.pullback, code.pullback_into):
        if name:
            ns[name] = numba.njit(ns[name])
    gradient = numba.njit(ns[code.gradient])
    x, w = np.linspace(-1.0, 2.0, 5), 0.7
    grads = [np.empty(5)]
    got = gradient(x, w, *grads)
    value = got[0] if isinstance(got, tuple) else got
    # s = sum((w x)^2): ds/dx = 2 w^2 x
    assert value == pytest.approx(np.sum((w * x) ** 2), rel=1e-14)
    np.testing.assert_allclose(grads[0], 2.0 * w * w * x, rtol=1e-14)
