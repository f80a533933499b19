"""grad's one compiled call on the numba backend has the forward and the pullback inlined by
numba (``inline="always"``: adgen.numba_function.NumbaFunction._load), so they are not compiled apart and linked
in (their code optimised twice): the forward dispatcher stays uncompiled under grad, vjp
compiles it when called, and the check that each typed tape column holds values of the type
numba infers reads the forward's variables in the gradient function's typing. Gradients
against central differences. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen import numba_function

numba = pytest.importorskip("numba")


def running_softmax(x, gamma):
    s = 0.0
    m = -np.inf
    for i in range(x.shape[0]):
        r = x[i] / gamma
        m = max(m, r)  # a float read back per iteration: a typed column
        s += np.exp(r - m) * x[i]
    return s + m


def positive_softmax(x, gamma):
    s = 0.0
    m = -np.inf
    for i in range(x.shape[0]):
        r = x[i] / gamma
        m = max(m, r)
        if r > 0:  # a branch per iteration: the loop's numbers go in typed list columns
            s += np.exp(r - m) * x[i]
    return s + m


def _fresh(monkeypatch, tmp_path):
    from adgen.transforms import pipeline

    from adgen import backends

    monkeypatch.setenv("ADGEN_NUMBA_CACHE", str(tmp_path))
    pipeline.clear_cache()
    backends._NUMBA.clear()
    return backends


def test_grad_compiles_the_gradient_function_alone(monkeypatch, tmp_path):
    backends = _fresh(monkeypatch, tmp_path)
    x = np.linspace(-1.0, 2.0, 9)
    gx, gg = adgen.grad(running_softmax, argnums=(0, 1), backend="numba")(x, 0.7)
    assert_grad_close(gx, numerical_grad(running_softmax, (x, 0.7), 0))
    assert gg == pytest.approx(numerical_grad(running_softmax, (x, 0.7), 1), rel=1e-6)
    nf = next(c for base, c in backends._NUMBA.values()
              if base.name == "running_softmax").gradient.__self__
    run = next(iter(nf.runs.values()))
    assert run.gradient is not None and len(run.gradient.overloads) == 1
    assert not run.forward.overloads  # inlined into the gradient function, not compiled
    assert run.code.forward in numba_function.inlined_functions(run.code)
    out, pb = adgen.vjp(running_softmax, x, 0.7, backend="numba")  # compiles the forward
    assert out == pytest.approx(running_softmax(x, 0.7), rel=1e-14)
    assert_grad_close(pb(1.0)[0], gx, rtol=1e-14)
    assert_grad_close(pb(-0.5)[0], -0.5 * gx, rtol=1e-14)


def test_a_column_of_another_type_is_refused_through_the_inlined_forward(monkeypatch,
                                                                           tmp_path):
    """The column kinds come from adgen's type analysis; where numba infers another type for
    a recorded value, the gradient is refused, never cast: made to happen here by claiming
    an int column for a float value (positive_softmax: its branch keeps the loop's
    numbers in typed list columns, where running_softmax's now go in float64 arrays)."""
    _fresh(monkeypatch, tmp_path)
    real = numba_function.NumbaFunction.code_for

    def wrong_kinds(self, types_):
        code = real(self, types_)
        assert code.columns, "the function keeps a typed column"
        code.columns = {k: "i8" for k in code.columns}
        return code

    monkeypatch.setattr(numba_function.NumbaFunction, "code_for", wrong_kinds)
    with pytest.raises(adgen.UnsupportedError, match="column, but numba computes it as"):
        adgen.grad(positive_softmax, backend="numba")(np.linspace(-1.0, 2.0, 5), 0.7)


def test_the_typed_list_columns_hold_the_right_values(monkeypatch, tmp_path):
    """The function the refusal above is made on, with its columns as adgen types them."""
    _fresh(monkeypatch, tmp_path)
    x = np.linspace(-1.0, 2.0, 5)
    # r = x / 0.7 increases, so m = r at each step and exp(r - m) = 1: d/dx_i is 1 where
    # x_i > 0, and the last one adds m's 1 / 0.7
    assert_grad_close(adgen.grad(positive_softmax, backend="numba")(x, 0.7),
                      np.array([0.0, 0.0, 1.0, 1.0, 1.0 + 1.0 / 0.7]), rtol=1e-12)
    x = np.array([0.3, -0.2, 1.1, 0.4, -0.9, 0.8])
    assert_grad_close(adgen.grad(positive_softmax, backend="numba")(x, 0.7),
                      numerical_grad(positive_softmax, (x, 0.7), 0))

