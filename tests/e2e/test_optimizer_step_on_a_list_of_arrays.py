"""An optimizer step written the way training code writes it: a module-level helper takes
the parameters in a list or tuple made at the call and updates each array in place.

    def sgd_step(params, grads, lr):
        for p, g in zip(params, grads):
            p -= lr * g
    ...
    sgd_step([W, b], [gW, gb], 0.1)

Session 15 refused such a call at its line (the helper was compiled without knowing its
parameter holds a list, and the arrays' writes were lost); adgen now binds the display to a
name before the call (transforms/display_arguments.py) and follows the list or tuple into
the arrays it holds. Gradients against central differences under both policies, the
arguments' final state, and forward mode (jvp against a central difference).

Where the helper overwrites an array a gradient read before the call (``train`` reads ``W``
in ``local_grads(W, b, x)``, then ``sgd_step`` writes it), "save" keeps a copy, and
"strict" refuses at the helper's write, naming the call, that write and the read, as it
refuses ``step(W, gW)`` handed ``W`` directly (until session 17 the caller copied it under
"strict" too). Its hint, applied as written, runs under "strict" with the same gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen


def sgd_step(params, grads, lr):
    for p, g in zip(params, grads):
        p -= lr * g


def local_grads(W, b, x):
    r = x @ W + b
    return x.T @ r, np.sum(r, axis=0)


def train(W, b, x):
    W = W.copy()
    b = b.copy()
    for _ in range(3):
        gW, gb = local_grads(W, b, x)
        sgd_step([W, b], [gW, gb], 0.1)
    return np.sum((x @ W + b) ** 2)


def momentum_update(state, g):
    # a tuple of buffers, unpacked and each written in place
    m, v = state
    m *= 0.9
    m += 0.1 * g
    v *= 0.9
    v += 0.1 * g * g


def adam_like(x):
    m = np.zeros_like(x)
    v = np.ones_like(x)
    momentum_update((m, v), np.sin(x))
    momentum_update((m, v), x * x)
    return np.sum(m / np.sqrt(v))


def clip_first(params, lo):
    # an item of the list written by index
    params[0][...] = np.maximum(params[0], lo)
    params[1][1:] *= 2.0


def clipped(x):
    a = np.sin(x)
    b = x * x
    before = np.sum(a * b)          # read before the helper writes them
    clip_first([a, b], 0.1)
    return before + np.sum(a * np.cos(b))


def shift_all(arrays, by=1.0):
    for a in arrays:
        a += by


def keyword_list(x):
    u = np.exp(x)
    w = x * 1.0
    shift_all(arrays=[u, w], by=x[0])
    return np.sum(u * w * x)


# train and keyword_list with strict's hint applied: the line whose gradient reads the array
# the helper writes reads (or keeps) a copy of it; the values computed are the same


def train_hint_applied(W, b, x):
    W = W.copy()
    b = b.copy()
    for _ in range(3):
        gW, gb = local_grads(W.copy(), b, x)
        sgd_step([W, b], [gW, gb], 0.1)
    return np.sum((x @ W + b) ** 2)


def keyword_list_hint_applied(x):
    u = np.exp(x).copy()
    w = x * 1.0
    shift_all(arrays=[u, w], by=x[0])
    return np.sum(u * w * x)


def line_of(f, text):
    """The line of ``f``'s source in this file that holds ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


RNG = np.random.default_rng(7)
W0 = RNG.standard_normal((3, 2))
B0 = RNG.standard_normal(2)
X = RNG.standard_normal((4, 3)) * 0.5
V5 = RNG.uniform(0.2, 1.3, 5)

CASES = {
    "sgd_step": (train, (W0, B0, X)),
    "tuple_of_moments": (adam_like, (V5,)),
    "items_written_by_index": (clipped, (V5,)),
    "list_by_keyword": (keyword_list, (V5,)),
}


# strict refuses the cases whose helper overwrites an array a gradient read before the call
# (test_strict_refuses_naming_the_call_the_write_and_the_read)
REFUSED_UNDER_STRICT = {"sgd_step", "list_by_keyword", "items_written_by_index"}


@pytest.mark.parametrize("case, mutation", [
    (case, mutation) for case in sorted(CASES) for mutation in ("save", "strict")
    if mutation == "save" or case not in REFUSED_UNDER_STRICT])
def test_gradient_matches_central_differences(case, mutation):
    f, args = CASES[case]
    given = [a.copy() for a in args]
    for argnum in range(len(args) if f is not train else 2):
        got = adgen.grad(f, argnums=argnum, mutation=mutation)(*given)
        assert_grad_close(got, numerical_grad(f, args, argnum), rtol=1e-5, atol=1e-7)
    for a, g in zip(args, given):
        np.testing.assert_array_equal(a, g)  # the caller's arrays are left as they were


@pytest.mark.parametrize("f, args, call, read, rewrite, helper, write", [
    (train, (W0, B0, X), "sgd_step([W, b], [gW, gb], 0.1)",
     "gW, gb = local_grads(W, b, x)", "gW, gb = local_grads(W.copy(), b, x)",
     sgd_step, "p -= lr * g"),
    (keyword_list, (V5,), "shift_all(arrays=[u, w], by=x[0])", "u = np.exp(x)",
     "u = np.exp(x).copy()", shift_all, "a += by"),
], ids=["sgd_step", "list_by_keyword"])
def test_strict_refuses_naming_the_call_the_write_and_the_read(f, args, call, read, rewrite,
                                                                helper, write):
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, mutation="strict")(*[a.copy() for a in args])
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, line_of(f, call))
    assert (err.inner[0].file, err.inner[0].line) == (__file__, line_of(helper, write))
    assert (err.captured_at.file, err.captured_at.line) == (__file__, line_of(f, read))
    assert f"overwrites it in place at line {line_of(helper, write)} ({write})" in err.message
    assert f"the gradient of line {line_of(f, read)} ({read}) reads" in err.message
    assert 'mutation="save"' in err.hint
    assert f"line {line_of(f, read)}: {rewrite}" in err.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, applied, args", [
    (train, train_hint_applied, (W0, B0, X)),
    (keyword_list, keyword_list_hint_applied, (V5,)),
], ids=["sgd_step", "list_by_keyword"])
def test_the_hint_applied_runs_under_strict_with_the_gradient(f, applied, args, mutation):
    given = [a.copy() for a in args]
    for argnum in range(min(len(args), 2)):
        value, got = adgen.value_and_grad(applied, argnums=argnum, mutation=mutation)(*given)
        assert value == pytest.approx(f(*args), rel=1e-12)  # the program computes as before
        assert_grad_close(got, numerical_grad(f, args, argnum), rtol=1e-5, atol=1e-7)
    for a, g in zip(args, given):
        np.testing.assert_array_equal(a, g)


def test_strict_refuses_what_the_direct_call_refuses():
    # the caller's np.sum(a * b) and np.maximum's pullback (in the helper) read params[0]
    # as it was: strict refuses the write that overwrites it, at the caller's line that
    # hands a over, naming the helper's line and both reads
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(clipped, mutation="strict")(V5.copy())
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, line_of(clipped, "clip_first("))
    write = line_of(clip_first, "params[0][...] = np.maximum(params[0], lo)")
    assert (err.inner[0].file, err.inner[0].line) == (__file__, write)
    assert err.captured_at.line == line_of(clipped, "before = np.sum(a * b)")
    assert f"the gradient of line {write} (params[0][...] = np.maximum(params[0], lo)) " \
        "reads it too" in err.message
    assert "np.maximum(params[0].copy(), lo)" in err.hint


def test_value_is_the_plain_calls():
    value, _ = adgen.value_and_grad(train, mutation="save")(W0.copy(), B0.copy(), X)
    assert value == pytest.approx(train(W0, B0, X), rel=1e-12)


@pytest.mark.parametrize("case", ["sgd_step", "tuple_of_moments", "list_by_keyword"])
def test_forward_mode(case):
    f, args = CASES[case]
    tangents = (np.ones_like(args[0]),) + (None,) * (len(args) - 1)
    check_jvp(f, args, tangents, atol=1e-7)
