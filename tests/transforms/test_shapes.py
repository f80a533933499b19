"""The shapes analysis (transforms/analyses/shapes.py) and the code it lets the reverse pass
drop (``unbroadcast`` where an operand or a stored value has the shape it meets).

The facts are checked on their own, then through grad against central differences, next to
programs that look alike where an operand is broadcast (an axis of length 1, a number, the
previous iteration's slice), where a wrong fact would be a wrong gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import front, pipeline
from adgen.transforms.analyses.kinds import NUMBER, kinds, param_kind, signature
from adgen.transforms.analyses.shapes import shape_keys
from gradcheck import check_grad

A1, B1 = 0.4, 0.3


def _keys(fn, *args):
    parsed, tree, _namer, _headers = front.front(fn)
    resolve = lambda node: front.resolve(parsed, node)  # noqa: E731
    params = {a.id: param_kind(k) for a, k in zip(tree.args.args, signature(args))}
    known = kinds(tree, params, resolve)
    return shape_keys(tree, known, resolve)


def _loop_source(fn, *args, wrt=(0,)):
    src = pipeline.compile_function(fn, wrt=wrt, sig=signature(args)).own_source
    return src.split("_pullback")[1]


# ---------------------------------------------------------------------------------------------
# programs


def recursive_rows(img):
    """A recursive filter along rows, its state a loop-carried view (Deriche's form)."""
    h, w = img.shape
    y = np.empty((h, w))
    xm1 = np.zeros(h)
    ym1 = np.zeros(h)
    for j in range(w):
        y[:, j] = A1 * img[:, j] + 0.2 * xm1 + B1 * ym1
        xm1 = img[:, j]
        ym1 = y[:, j]
    return np.sum(y ** 2)


def recursive_rows_broadcast(img):
    """The same, with a state of one element: it broadcasts over the column."""
    h, w = img.shape
    y = np.empty((h, w))
    ym1 = np.zeros(1)
    for j in range(w):
        y[:, j] = A1 * img[:, j] + B1 * ym1
        ym1 = y[:1, j]
    return np.sum(y ** 2)


def prefix_updates(r):
    """Durbin's form: slices y[:k] and z[:k] of two vectors of one length."""
    n = r.shape[0]
    y = np.zeros(n)
    z = np.zeros(n)
    y[0] = -r[0]
    for k in range(1, n):
        a = r[k] + r[:k][::-1] @ y[:k]
        z[:k] = y[:k] + a * y[:k][::-1]
        y[:k] = z[:k]
        y[k] = a
    return np.sum(y ** 2)


def previous_prefix(x, w):
    """prev is the previous iteration's x[:k]: one shorter, broadcast when it has length 1."""
    prev = x[:1] * w
    s = 0.0
    for k in range(1, 3):
        cur = x[:k] * w
        both = prev + cur
        s = s + np.sum(both * both)
        prev = x[:k + 1] * w
    return s


def stage_rows(y0, w):
    """Stages in rows of a (2, n) buffer allocated from the argument's length."""
    y = y0.copy()
    k = np.empty((2, y0.shape[0]))
    for _ in range(3):
        k[0] = np.tanh(w * y)
        k[1] = np.tanh(w * (y + 0.5 * k[0]))
        y += 0.1 * (k[0] + k[1])
    return np.sum(y ** 2)


def row_from_column(x):
    """A row of a matrix stored from a slice of one element: broadcast."""
    out = np.empty((3, x.shape[0]))
    for i in range(3):
        out[i, :] = x[:1] * (i + 1.0)
    return np.sum(out ** 2)


def growing(x):
    """A loop header whose length doubles: its own axes, never its first value's."""
    y = x * 1.0
    s = 0.0
    for _ in range(2):
        t = y * 2.0
        s = s + np.sum(t * y)
        y = np.concatenate([y, y])
    return s + np.sum(y * y)


# ---------------------------------------------------------------------------------------------
# facts


def test_loop_carried_views_take_the_column_shape():
    keys = _keys(recursive_rows, np.ones((4, 5)))
    assert keys["xm1_1"] == keys["ym1_1"] == keys["xm1"]  # np.zeros(h) and img[:, j]
    assert keys["y"][0] == keys["xm1"][0]  # np.empty((h, w)) with h, w = img.shape


def test_a_state_of_one_element_is_not_a_column():
    keys = _keys(recursive_rows_broadcast, np.ones((4, 5)))
    column = keys["y"][:1]  # the length of img[:, j]
    assert column == (("p", "img", 0),)
    assert keys["ym1_1"] != column  # np.zeros(1), then y[:1, j]


def test_prefix_slices_of_vectors_of_one_length_agree():
    keys = _keys(prefix_updates, np.ones(6))
    prefixes = {k for n, k in keys.items() if len(k) == 1 and k[0][0] == "sl"}
    assert len(prefixes) == 1  # y[:k], z[:k], y[:k][::-1], r[:k] and what they make


def test_the_previous_iterations_slice_is_not_this_ones():
    keys = _keys(previous_prefix, np.ones(4), 0.5)
    assert keys["prev_1"] != keys["cur"]


def test_a_growing_header_has_axes_of_its_own():
    keys = _keys(growing, np.ones(3))
    assert keys["y_1"] != keys["x"]


# ---------------------------------------------------------------------------------------------
# gradients, and the code they come from


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_recursive_rows(mutation):
    img = np.random.default_rng(0).standard_normal((4, 5))
    check_grad(recursive_rows, (img,))
    body = _loop_source(recursive_rows, img)
    assert "unbroadcast" not in body


def test_recursive_rows_broadcast():
    img = np.random.default_rng(1).standard_normal((4, 5))
    check_grad(recursive_rows_broadcast, (img,))
    assert "unbroadcast" in _loop_source(recursive_rows_broadcast, img)


def test_prefix_updates():
    r = np.random.default_rng(2).uniform(0.1, 0.3, 6)
    check_grad(prefix_updates, (r,))
    body = _loop_source(prefix_updates, r)
    assert body.count("unbroadcast") <= 1  # a's gradient sums a vector: that one stays


def test_previous_prefix():
    check_grad(previous_prefix, (np.array([0.3, -0.7, 1.1, 0.4]), 0.6), argnums=(0, 1))


def test_stage_rows():
    y0 = np.random.default_rng(3).standard_normal(5)
    check_grad(stage_rows, (y0, 0.7), argnums=(0, 1))


def test_row_from_column():
    check_grad(row_from_column, (np.array([0.3, -0.7, 1.1]),))
    assert "unbroadcast" in _loop_source(row_from_column, np.ones(3))


def test_growing():
    check_grad(growing, (np.array([0.3, -0.7, 1.1]),))
    check_grad(growing, (np.array([0.9]),))  # length 1: y * 2.0 against y would broadcast


def test_numbers_have_no_axes():
    keys = _keys(previous_prefix, np.ones(4), 0.5)
    assert keys["w"] == () and keys["s"] == ()
    assert NUMBER  # the kinds' number is what gives () here


# ---------------------------------------------------------------------------------------------
# a number's cotangent from a vector it scaled: a dot product (reverse_ops._summed_product)


def scaled_columns(A, alpha):
    """syr2k's form: numbers scaling columns of a matrix, accumulated into rows."""
    C = np.zeros((A.shape[0], A.shape[0]))
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * A[i, k]
    return np.sum(C ** 2)


def scaled_and_broadcast(x, alpha):
    """alpha scales x[:1] (alpha's cotangent is a dot product with x[:1]), which then
    broadcasts over x[:i]: that addition's pullback sums t's cotangent down to one element
    first."""
    s = 0.0
    for i in range(1, 3):
        t = x[:1] * alpha + x[:i]
        s = s + np.sum(t * t)
    return s


def test_scaled_columns():
    A = np.random.default_rng(4).standard_normal((4, 3))
    check_grad(scaled_columns, (A, 0.7), argnums=(0, 1))
    assert " @ " in _loop_source(scaled_columns, A, 0.7, wrt=(0, 1))


def test_scaled_and_broadcast():
    check_grad(scaled_and_broadcast, (np.array([0.3, -0.7, 1.1]), 0.6), argnums=(0, 1))
    assert "unbroadcast(" in _loop_source(scaled_and_broadcast, np.ones(3), 0.6, wrt=(0, 1))


# ---------------------------------------------------------------------------------------------
# reductions that keep their axes


def softmax_rows(s, w):
    s = s - np.max(s, axis=1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(axis=1, keepdims=True)
    return np.sum(a * w)


def column_means_subtracted(s, w):
    """The look-alike: a reduction over axis 0 without keepdims broadcasts as a row."""
    m = np.mean(s, axis=0)
    return np.sum(np.tanh(s - m) * w)


def kept_over_columns(s, w):
    """keepdims over axis 0 (the other axis): (1, k) against (n, k)."""
    return np.sum(np.sin(s / s.sum(0, keepdims=True)) * w)


def test_a_kept_reduction_has_its_axis_of_length_one():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))
    keys = _keys(softmax_rows, *args)
    s0 = keys["s"]
    reduced = [k for n, k in keys.items() if len(k) == 2 and k[1] == ("c", 1)]
    assert reduced and all(k[0] == s0[0] for k in reduced), keys
    assert keys["a"] == s0, keys  # exp(s - max) / sum: the input's shape


@pytest.mark.parametrize("f", [softmax_rows, column_means_subtracted, kept_over_columns])
@pytest.mark.parametrize("shape", [(4, 3), (1, 3), (4, 1)])
def test_kept_reductions_against_central_differences(f, shape):
    """(n, 1) and (1, k) arguments next to (n, k): the axis of length 1 is both."""
    rng = np.random.default_rng(1)
    args = (rng.uniform(0.5, 2.0, shape), rng.standard_normal(shape))
    check_grad(f, args, (0, 1))


def test_the_softmax_pullback_has_no_unbroadcast_of_its_input():
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))
    src = _loop_source(softmax_rows, *args, wrt=(0, 1))
    # (the max shift has no pullback at all: analyses.shift_invariance)
    assert "unbroadcast(s_1_bar" not in src and "max_vjp" not in src, src
    # nor the exponential and its row sums: the softmax's adjoint (rules.reductions.softmax)
    assert "s_1_bar = a_1 * (a_1_bar - sum_keepdims(a_1_bar * a_1, 1))" in src, src
    assert "unbroadcast(" not in src.split("a = a / a.sum(axis=1, keepdims=True)")[-1], src
