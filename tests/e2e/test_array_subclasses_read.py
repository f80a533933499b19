"""Array subclasses the function reads from outside its arguments are refused at the line.

Arguments that are (or hold) an ``np.matrix`` or a masked array were refused, but the same
values reached the compiled code unchecked through a global, a closure cell, a keyword-only
argument, a default, a global dict or namespace, or a constructor called inside
(``np.matrix([[1.0, 2.0], [3.0, 4.0]])``, ``c.view(np.matrix)``): the rules take ``*`` for an
elementwise product and a masked sum for a plain one, so the gradient was silently wrong
(``M * v`` of a global matrix: ``[[4, 6], [4, 6]]`` for ``[[4, 4], [6, 6]]``; a masked
element got a gradient). Each form is now refused, naming the user's line and the value."""

from __future__ import annotations

import types

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad

M = np.matrix([[1.0, 2.0], [3.0, 4.0]])
MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
DATA = {"M": M}
CFG = types.SimpleNamespace(M=M)
PLAIN = np.array([[1.0, 2.0], [3.0, 4.0]])
REBOUND = np.array([[1.0, 2.0], [3.0, 4.0]])


def global_matrix(v):
    return np.sum(np.asarray(M * v))  # MARK global


def global_masked(v):
    return np.sum(MASKED * v)  # MARK masked


def matrix_in_global_dict(v):
    return np.sum(np.asarray(DATA["M"] * v))  # MARK dict


def matrix_in_namespace(v):
    return np.sum(np.asarray(CFG.M * v))  # MARK namespace


def matrix_built_inside(v):
    a = np.matrix([[1.0, 2.0], [3.0, 4.0]])  # MARK built
    return np.sum(np.asarray(a * v))


def matrix_viewed_inside(v):
    a = np.array([[1.0, 2.0], [3.0, 4.0]]).view(np.matrix)  # MARK viewed
    return np.sum(np.asarray(a * v))


def masked_built_inside(v):
    m = np.ma.masked_where(v < 0.0, np.array([1.0, 2.0, 3.0]))  # MARK masked_where
    return np.sum(m * v)


def default_matrix(v, a=M):  # MARK default
    return np.sum(np.asarray(a * v))


def rebound_later(v):
    return np.sum(np.asarray(REBOUND * v))  # MARK rebound


def helper_reads_matrix(v):
    return global_matrix(v) + np.sum(v)


def closure_over(a):
    def loss(v):
        return np.sum(np.asarray(a * v))  # MARK closure
    return loss


def plain_global(v):
    return np.sum(PLAIN * v)


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


V2 = np.array([[1.5, 0.5], [0.5, 1.5]])
V3 = np.array([0.5, 0.1, 0.2])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, v, mark, what", [
    (global_matrix, V2, "global", "M"),
    (global_masked, V3, "masked", "MASKED"),
    (matrix_in_global_dict, V2, "dict", "DATA"),
    (matrix_in_namespace, V2, "namespace", "CFG.M"),
    (matrix_built_inside, V2, "built", "np.matrix"),
    (matrix_viewed_inside, V2, "viewed", "np.matrix"),
    (masked_built_inside, V3, "masked_where", "np.ma.masked_where"),
    (default_matrix, V2, "default", "a"),
    (closure_over(M), V2, "closure", "a"),
    (helper_reads_matrix, V2, "global", "M"),
    (lambda v: global_matrix(v), V2, "global", "M"),
])
def test_refused_at_the_line(fun, v, mark, what, mutation):
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(fun, mutation=mutation)(v.copy())
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line(f"# MARK {mark}"))
    assert what in err.message and "subclass" in err.message
    assert "np.asarray" in err.hint


def keyword_matrix_line(v, *, a):
    return np.sum(np.asarray(a * v))  # MARK keyword


def from_a_callback(v, make):
    k = make()  # MARK callback
    return np.sum(np.asarray(k * v))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_values_that_arrive_when_the_gradient_runs_are_refused(mutation):
    """A keyword argument (checked when the gradient is called, as positional ones are) or a
    callback's result (seen where the call returns it: runtime.plain_result, at its line)."""
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(keyword_matrix_line, mutation=mutation)(V2.copy(), a=M)
    assert "keyword argument 'a'" in info.value.message and "np.asarray" in info.value.hint
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(from_a_callback, mutation=mutation)(V2.copy(), lambda: M)
    assert info.value.location.line == _line("# MARK callback")
    # plain arrays there are differentiated, against central differences
    check_grad(keyword_matrix_line, (V2,), kwargs={"a": np.asarray(M)}, mutation=mutation)
    check_grad(from_a_callback, (V2, lambda: np.asarray(M)), mutation=mutation)


def keyword_masked_added(v, *, m):
    return np.sum(np.asarray(m + v) ** 2)


def test_keyword_arguments_are_checked_when_called():
    """A masked keyword argument only added (no product reaches a pullback) gave a gradient at
    its masked element, which the plain call's value does not depend on."""
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    for run in (lambda: adgen.grad(keyword_masked_added)(V3.copy(), m=masked),
                lambda: adgen.vjp(keyword_masked_added, V3.copy(), m=masked)):
        with pytest.raises(adgen.NonDifferentiableError) as info:
            run()
        assert "keyword argument 'm'" in info.value.message
        assert "numpy.ma.MaskedArray" in info.value.message
    check_grad(keyword_masked_added, (V3,), kwargs={"m": masked.filled(0.0)})


def test_vjp_and_jvp_refuse_too():
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.vjp(global_matrix, V2.copy())
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.jvp(global_matrix, (V2.copy(),), (np.ones((2, 2)),))


def test_a_global_rebound_to_a_matrix_after_a_gradient_is_refused():
    global REBOUND
    g = adgen.grad(rebound_later)
    check_grad(rebound_later, (V2,))
    saved = REBOUND
    REBOUND = np.asmatrix(saved)
    try:
        with pytest.raises(adgen.NonDifferentiableError) as info:
            g(V2.copy())
        assert info.value.location.line == _line("# MARK rebound")
    finally:
        REBOUND = saved
    np.testing.assert_allclose(g(V2.copy()), PLAIN)  # d sum(A * v) / dv = A


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_plain_arrays_and_memmaps_are_differentiated(mutation, tmp_path):
    check_grad(plain_global, (V2,), mutation=mutation)
    check_grad(closure_over(PLAIN), (V2,), mutation=mutation)
    mm = np.memmap(tmp_path / "a.dat", dtype=np.float64, mode="w+", shape=(2, 2))
    mm[:] = PLAIN
    check_grad(closure_over(mm), (V2,), mutation=mutation)


def callback_added(v, make):
    k = make()  # MARK callback-added
    return np.sum(np.asarray(k + v) ** 2)


def callback_counted(v, make):
    k = make()
    n = k.count()  # the masked array's own method, beside no value with a derivative
    return np.sum(v ** 2) * n


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callbacks_subclass_result_only_added_is_refused_where_it_is_made(mutation):
    """A function passed as an argument, whose result has no derivative and is only added to
    values that have one: nothing of the subclass reaches a pullback, and the gradient had
    2 (k + v) at the masked element, where the plain call's value does not depend on v (it
    keeps k's data there). Refused at the call, on every call (the fast form's too)."""
    masked = np.ma.masked_array([[1.0, 2.0], [3.0, 4.0]], mask=[[0, 1], [0, 0]])
    g = adgen.grad(callback_added, mutation=mutation)
    for make in (lambda: masked, lambda: M):
        for _ in range(3):  # the generic call, then the signature's fast form
            with pytest.raises(adgen.NonDifferentiableError) as info:
                g(V2.copy(), make)
            assert info.value.location.line == _line("# MARK callback-added")
            assert "make() gave a numpy" in info.value.message
            assert "np.asarray" in info.value.hint
    for _ in range(3):
        check_grad(callback_added, (V2, lambda: np.asarray(M)), mutation=mutation)
    # a subclass value that meets no value with a derivative is left alone
    check_grad(callback_counted, (V2, lambda: masked), mutation=mutation)
    np.testing.assert_allclose(adgen.grad(callback_counted, mutation=mutation)(V2, lambda: masked),
                               2 * V2 * 3)
