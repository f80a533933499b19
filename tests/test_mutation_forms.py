"""More in-place forms: list.extend, dict.update, x.put / np.put, np.fill_diagonal."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def extend_then_stack(x):
    rows = [np.sin(x)]
    rows.extend([x * 2.0, np.cos(x)])
    return np.sum(np.stack(rows) ** 2)


def update_states(x):
    d = {"a": x * 1.0}
    d.update({"b": np.tanh(x), "c": x * x})
    return np.sum(d["a"] * d["b"]) + np.sum(d["c"])


def put_values(x, v):
    y = np.zeros(5)
    y.put([0, 3], v * 2.0)
    np.put(y, [1], np.sum(x))
    return np.sum(np.sin(y) * x)


def fill_diagonal_then_solve(a, x):
    m = a.copy()
    np.fill_diagonal(m, 3.0 + x)
    return np.sum(np.linalg.solve(m, np.ones(3)))


CASES = [
    (extend_then_stack, (np.array([0.3, -0.7, 1.1]),), 0),
    (update_states, (np.array([0.3, -0.7]),), 0),
    (put_values, (np.linspace(0.1, 0.5, 5), np.array([0.2, -0.4])), 0),
    (put_values, (np.linspace(0.1, 0.5, 5), np.array([0.2, -0.4])), 1),
    (fill_diagonal_then_solve, (np.array([[0.0, 0.2, 0.1], [0.3, 0.0, -0.2],
                                          [0.1, 0.1, 0.0]]), 0.5), 0),
    (fill_diagonal_then_solve, (np.array([[0.0, 0.2, 0.1], [0.3, 0.0, -0.2],
                                          [0.1, 0.1, 0.0]]), 0.5), 1),
]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn,args,argnum", CASES,
                         ids=[f"{c[0].__name__}-{c[2]}" for c in CASES])
def test_form_gradients(fn, args, argnum, mutation):
    fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    g = adgen.grad(fn, argnums=argnum, mutation=mutation)(*fresh)
    assert_grad_close(g, numerical_grad(fn, list(args), argnum))


def test_put_on_a_non_contiguous_array_is_refused():
    def put_strided(x):
        y = np.zeros((4, 4)).T[::2]
        y.put([0], x)
        return np.sum(y)

    with pytest.raises(adgen.UnsupportedError, match="flat view"):
        adgen.grad(put_strided)(1.0)


def _square_in_place(dst, src):
    dst *= src
    return dst


def strided_view_through_a_helper(x):
    x = x.copy()
    v = x[::2]
    _square_in_place(v, v)  # the helper's pullback reads v as it was
    x[x < 0.0] = 0.0  # ... and this overwrites it: the guard keeps a (compact) copy
    return np.sum(np.sin(x))


def test_a_guard_copy_of_a_strided_view_maps_back_with_the_views_strides():
    # found by the fuzzer: the copy's adjoint landed on x[:3] instead of x[::2]
    x = np.array([0.3, 0.5, -0.7, 0.2, 0.9, 0.4])
    g = adgen.grad(strided_view_through_a_helper)(x.copy())
    assert_grad_close(g, numerical_grad(strided_view_through_a_helper, [x], 0))


def reversed_view_as_dst(y):
    y = y.copy()
    v = y[::-1]
    _square_in_place(v, y)  # dst and src: one buffer, opposite orders
    v[:] = y  # overwrites what the helper's pullback reads
    return 0.5 * np.sum(y * y)


def reversed_view_as_src(y):
    y = y.copy()
    v = y[::-1]
    _square_in_place(y, v)
    v[:] = y
    return 0.5 * np.sum(y * y)


@pytest.mark.parametrize("fn", [reversed_view_as_dst, reversed_view_as_src],
                         ids=lambda f: f.__name__)
def test_a_helpers_saved_views_of_an_overwritten_buffer(fn):
    # found by the fuzzer: the first counted an adjoint twice (the redirected dst and its
    # in-place result became two objects), the second was refused
    y = np.array([0.3, -0.5, 0.7, 0.2, -0.9, 0.4])
    g = adgen.grad(fn)(y.copy())
    assert_grad_close(g, numerical_grad(fn, [y], 0))
    with pytest.raises(adgen.MutationError):
        adgen.grad(fn, mutation="strict")(y.copy())


def scale_then_refill(x, c):
    v = np.ones(len(x)) * c  # not differentiated: the factor of an in-place product
    y = x.copy()
    y *= v
    v.fill(0.5)  # overwrites the factor the product's gradient reads
    y /= v
    v[:] = 4.0
    return np.sum(np.sin(y))


def scale_argument_then_refill(x, c):
    v = np.zeros_like(x) + c
    x *= v  # the argument itself
    v.fill(0.5)
    return np.sum(np.sin(x))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn, scale", [(scale_then_refill, 0.25 / 0.5),
                                       (scale_argument_then_refill, 0.25)])
def test_an_in_place_products_factor_overwritten_later(fn, scale, mutation):
    # found by the fuzzer: the pullback of y *= v scaled by v as it is at the end (0.5), not
    # by the value the product used (c); hand-derived: y = x * scale
    x, c = np.array([0.3, -0.7, 1.1]), 0.25
    if mutation == "strict":
        with pytest.raises(adgen.MutationError, match="v.fill"):
            adgen.grad(fn, mutation=mutation)(x.copy(), c)
        return
    g = adgen.grad(fn, mutation=mutation)(x.copy(), c)
    np.testing.assert_allclose(g, np.cos(x * scale) * scale, rtol=1e-12)


# Index arrays, masks and conditions the pullback reads, overwritten later. Each gave a
# silently wrong gradient (or a raw ValueError) until they were captured like any value
# the gradient reads: an integer or bool array has no derivative, but it is read.


def gather_then_reindex(x):
    idx = np.array([0, 2])
    z = x[idx]
    idx[0] = 1
    return np.sum(np.sin(z) * np.array([1.0, 3.0]))


def scatter_then_reindex(x):
    idx = np.array([0, 2])
    y = np.zeros(3)
    y[idx] = x[:2] * 2.0
    idx[0] = 1
    return np.sum(np.sin(y) * np.arange(1.0, 4.0))


def mask_then_refill(x):
    m = x > 0
    z = x[m]
    m[:] = True
    return np.sum(z ** 3)


def where_then_refill(x):
    c = x > 0.5
    z = np.where(c, x * x, -x)
    c[:] = False
    return np.sum(z)


def argsort_then_overwrite(x):
    order = np.argsort(x)
    z = x[order] * np.arange(1.0, 4.0)
    order[:] = 0
    return np.sum(z ** 2)


INDEX_CASES = [gather_then_reindex, scatter_then_reindex, mask_then_refill,
               where_then_refill, argsort_then_overwrite]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", INDEX_CASES, ids=lambda f: f.__name__)
def test_an_index_read_by_the_gradient_overwritten_later(fn, mutation):
    x = np.array([0.3, 0.8, -0.4])
    if mutation == "strict":
        with pytest.raises(adgen.MutationError, match="overwrites"):
            adgen.grad(fn, mutation=mutation)(x.copy())
        return
    got = adgen.grad(fn, mutation=mutation)(x.copy())
    assert_grad_close(got, numerical_grad(fn, (x,), 0))


def index_never_written(x):
    idx = np.array([0, 2])
    m = x > 0
    return np.sum(x[idx] ** 2) + np.sum(np.where(m, x, 0.0))


def test_an_index_never_written_needs_no_capture():
    src = adgen.source(index_never_written)
    assert "capture(" not in src and "before_write(" not in src
    got = adgen.grad(index_never_written, mutation="strict")(np.array([0.3, 0.8, -0.4]))
    np.testing.assert_allclose(got, [0.6 + 1.0, 1.0, -0.8])


# Stores through an index that names an element twice: NumPy keeps one of the writes, and
# only the value it kept has a gradient (the fuzzer's gather/scatter form found this).


def scatter_repeated(x):
    y = np.zeros(4)
    y[[0, 2, 2]] = x * 2.0
    return np.sum(np.sin(y))


def scatter_repeated_into_itself(x):
    ix = np.array([0, 0, 0])
    v = x[ix]
    x[ix] = v
    return np.sum(np.sin(x))


def scatter_repeated_2d(x):
    y = np.zeros((2, 2))
    y[[0, 0, 1], [1, 1, 0]] = x
    return np.sum(np.sin(y))


def scatter_repeated_broadcast(x):
    y = np.zeros(4)
    y[[0, 2, 2]] = x[0]
    return np.sum(np.sin(y))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", [scatter_repeated, scatter_repeated_into_itself,
                                scatter_repeated_2d, scatter_repeated_broadcast],
                         ids=lambda f: f.__name__)
def test_a_store_through_repeated_indices(fn, mutation):
    x = np.array([0.3, 0.8, -0.4])
    got = adgen.grad(fn, mutation=mutation)(x.copy())
    assert_grad_close(got, numerical_grad(fn, (x,), 0))


def test_stored_part_keeps_the_write_numpy_kept():
    from adgen.runtime import stored_part

    g = np.array([10.0, 20.0, 30.0, 40.0])
    np.testing.assert_array_equal(stored_part(g, [0, 2, 2]), [10.0, 0.0, 30.0])
    np.testing.assert_array_equal(stored_part(g, np.array([3, 1])), [40.0, 20.0])
    np.testing.assert_array_equal(stored_part(g, g > 15.0), [20.0, 30.0, 40.0])
    part = stored_part(g, slice(1, 3))
    part[0] = -1.0
    assert g[1] == 20.0  # a copy, not a view
    assert stored_part(g, 2) == 30.0


def add_at_then_reindex(x):
    idx = np.array([0, 2, 2])
    y = np.zeros(3)
    np.add.at(y, idx, x)
    idx[0] = 1
    return np.sum(np.sin(y))


def list_index_then_store(x):
    idx = [2, 0]
    z = x[idx]
    idx[0] = 1
    return np.sum(np.sin(z) * np.array([1.0, 3.0]))


def take_method_then_reindex(x):
    idx = np.array([2, 2, 0])
    z = x.take(idx)
    idx[1] = 1
    return np.sum(np.sin(z) * np.arange(1.0, 4.0))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", [add_at_then_reindex, list_index_then_store,
                                take_method_then_reindex], ids=lambda f: f.__name__)
def test_more_indices_overwritten_later(fn, mutation):
    x = np.array([0.3, 0.8, -0.4])
    if mutation == "strict":
        with pytest.raises(adgen.MutationError, match="(overwrites|changes) idx"):
            adgen.grad(fn, mutation=mutation)(x.copy())
        return
    got = adgen.grad(fn, mutation=mutation)(x.copy())
    assert_grad_close(got, numerical_grad(fn, (x,), 0))


def closure_reads_a_buffer_written_later(x):
    y = x * 1.0

    def g(s):
        return np.sum(np.sin(y) * s)

    r = g(2.0)
    y[0] = 100.0  # the closure's gradient reads y as it was at the call
    return r


def copyto_where_then_remask(x):
    y = np.zeros(3)
    m = x > 0
    np.copyto(y, x * 2.0, where=m)  # only where m: the other elements keep their zeros
    m[:] = True
    return np.sum(np.sin(y))


def copyto_where_keeps_old_values(x):
    y = x * 3.0
    np.copyto(y, np.sin(x), where=x > 0.5)
    return np.sum(y * y)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", [closure_reads_a_buffer_written_later, copyto_where_then_remask,
                                copyto_where_keeps_old_values], ids=lambda f: f.__name__)
def test_closures_and_copyto_where(fn, mutation):
    x = np.array([0.3, 0.8, -0.4])
    want_value = fn(x.copy())
    if mutation == "strict" and fn is not copyto_where_keeps_old_values:
        with pytest.raises(adgen.MutationError, match="overwrites"):
            adgen.grad(fn, mutation=mutation)(x.copy())
        return
    value, got = adgen.value_and_grad(fn, mutation=mutation)(x.copy())
    assert value == want_value
    assert_grad_close(got, numerical_grad(fn, (x,), 0))


def test_copyto_with_a_casting_rule_is_refused():
    def cast(x):
        y = np.zeros(3)
        np.copyto(y, x, casting="no")
        return np.sum(y)

    with pytest.raises(adgen.UnsupportedError, match="copyto"):
        adgen.grad(cast)(np.array([0.3, 0.8, -0.4]))


class _Weights:
    def __init__(self):
        self.w = np.array([1.0, -2.0, 0.5])
        self.scratch = np.zeros(3)

    def forward(self, x):
        return np.sin(self.w * x)


def method_then_weights_written(x):
    m = _Weights()
    z = m.forward(x)
    m.w[1] = 7.0  # the method's gradient reads self.w as it was at the call
    return np.sum(z ** 2)


def method_then_scratch_written(x):
    m = _Weights()
    z = m.forward(x)
    m.scratch[:] = 3.0  # an array the method's gradient does not read
    return np.sum(z ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_objects_array_written_after_a_method_read_it(mutation):
    x = np.array([0.3, 0.8, -0.4])
    if mutation == "strict":
        with pytest.raises(adgen.MutationError, match=r"m\.w"):
            adgen.grad(method_then_weights_written, mutation=mutation)(x.copy())
    else:
        got = adgen.grad(method_then_weights_written, mutation=mutation)(x.copy())
        assert_grad_close(got, numerical_grad(method_then_weights_written, (x,), 0))
    # an array of the object the method's gradient does not read: no guard, no error
    got = adgen.grad(method_then_scratch_written, mutation=mutation)(x.copy())
    assert_grad_close(got, numerical_grad(method_then_scratch_written, (x,), 0))


def closure_called_in_a_loop(x):
    y = x * 1.0

    def g(k):
        return np.sum(np.sin(y) * k)

    s = 0.0
    for k in range(3):
        s = s + g(k + 1.0)
        y[k] = 0.0  # the next call sees the new y; this call's gradient reads the old one
    return s


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_closure_called_in_a_loop_that_writes_what_it_reads(mutation):
    # the pullback referred to the closure's own adjoint, a NameError, before
    x = np.array([0.3, 0.8, -0.4])
    if mutation == "strict":
        with pytest.raises(adgen.MutationError, match=r"y\[k\] = 0.0"):
            adgen.grad(closure_called_in_a_loop, mutation=mutation)(x.copy())
        return
    got = adgen.grad(closure_called_in_a_loop, mutation=mutation)(x.copy())
    assert_grad_close(got, numerical_grad(closure_called_in_a_loop, (x,), 0))


def closure_writes_enclosing(x):
    y = x * 2.0

    def bump():
        y[0] = y[0] + 1.0

    z = np.sin(y)
    bump()
    return np.sum(z) + np.sum(y ** 2)


def test_a_closure_writing_an_enclosing_array_is_refused():
    # it gave a silently wrong gradient: the enclosing function did not see the write
    with pytest.raises(adgen.UnsupportedError, match="bump writes y") as info:
        adgen.grad(closure_writes_enclosing)(np.array([0.3, 0.8, -0.4]))
    assert info.value.location is not None and info.value.location.line > 0


def tuple_index_then_rows_written(x):
    A = np.outer(x, x)
    rows = np.array([0, 2])
    t = (rows, 1)
    z = A[t]
    rows[1] = 1  # t holds rows: the gradient of A[t] reads it
    return np.sum(np.sin(z))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_tuple_index_whose_array_is_written_later(mutation):
    x = np.array([0.3, 0.8, -0.4])
    fn = tuple_index_then_rows_written
    if mutation == "strict":
        with pytest.raises(adgen.MutationError, match="rows"):
            adgen.grad(fn, mutation=mutation)(x.copy())
        return
    assert_grad_close(adgen.grad(fn, mutation=mutation)(x.copy()), numerical_grad(fn, (x,), 0))
