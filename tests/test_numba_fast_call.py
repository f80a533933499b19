"""grad's call on the numba backend decided once per argument signature
(numba_fast_call.fast_call, tried first by adgen.api's gradient function): after the
first call of a signature, a call checks only the arguments' exact types, dtypes and ranks,
the rule registry's generation, the function's code and the guards of its free names, then
runs the one compiled call (which returns the value alone where every cotangent is in the
arrays grad allocates: numba_gradient.only_into). Each check is made to fail here after the
fast call is in use, and the gradient must then be the new one (against central
differences), never the old compiled code's. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

numba = pytest.importorskip("numba")


def scale(v):
    return 2.0 * v


def scaled_mse(y, y_hat):
    s = 0.0
    for i in range(len(y)):
        s += scale((y[i] - y_hat[i]) ** 2.0)
    return s / len(y)


def tail_then_head(x, k):
    y = x[3:] * x[3:]
    for i in range(k):
        x[i] = 2.0 * x[i]
    return np.sum(y) + np.sum(x)


def _data():
    return np.linspace(0.0, 1.0, 7), np.linspace(1.0, -0.5, 7)


def _fast_in_use(g):
    if g.func.__name__ == "fast_direct":  # the partial calls the direct form
        return True
    cells = dict(zip(g.func.__code__.co_freevars, g.func.__closure__))
    return cells["fast"].cell_contents[0] is not None


def test_the_fast_call_gives_the_generic_calls_gradients():
    y, y_hat = _data()
    g = adgen.grad(scaled_mse, argnums=(0, 1), backend="numba")
    first = g(y, y_hat)
    assert _fast_in_use(g)
    for _ in range(3):
        again = g(y, y_hat)
        assert again[0] is not first[0]  # new arrays at each call
        for a, b, n in zip(again, first, (0, 1)):
            assert_grad_close(a, b, rtol=1e-15)
            assert_grad_close(a, numerical_grad(scaled_mse, (y, y_hat), n))
    value, gy = adgen.value_and_grad(scaled_mse, backend="numba")(y, y_hat)
    value, gy = adgen.value_and_grad(scaled_mse, backend="numba")(y, y_hat)
    assert value == pytest.approx(scaled_mse(y, y_hat), rel=1e-14)
    assert_grad_close(gy, numerical_grad(scaled_mse, (y, y_hat), 0))


def test_a_rebound_callee_recompiles():
    y, y_hat = _data()
    g = adgen.grad(scaled_mse, backend="numba")
    g(y, y_hat)
    g(y, y_hat)
    assert _fast_in_use(g)
    global scale
    old = scale
    try:
        def scale(v):  # noqa: F811 - rebinding the callee is the point
            return 5.0 * v

        assert_grad_close(g(y, y_hat), numerical_grad(scaled_mse, (y, y_hat), 0))
        assert_grad_close(g(y, y_hat), 5.0 / 2.0 * adgen.grad(old_mse_of(old))(y, y_hat),
                          rtol=1e-12)
    finally:
        scale = old
    assert_grad_close(g(y, y_hat), numerical_grad(scaled_mse, (y, y_hat), 0))


def old_mse_of(fn):
    def mse(y, y_hat):
        s = 0.0
        for i in range(len(y)):
            s += fn((y[i] - y_hat[i]) ** 2.0)
        return s / len(y)
    return mse


def test_a_shadowed_builtin_and_a_replaced_code_recompile():
    y, y_hat = _data()
    g = adgen.grad(scaled_mse, backend="numba")
    g(y, y_hat)
    g(y, y_hat)
    module = globals()
    module["len"] = lambda a: 3  # a global function shadowing the builtin
    try:
        with pytest.raises(adgen.UnsupportedError) as err:
            g(y, y_hat)  # compiled again, and the numba backend refuses such a global
        assert "reads the global len" in str(err.value)
    finally:
        del module["len"]
    assert_grad_close(g(y, y_hat), numerical_grad(scaled_mse, (y, y_hat), 0))

    def plain(y, y_hat):
        return np.sum((y - y_hat) ** 2)

    def cubed(y, y_hat):
        return np.sum((y - y_hat) ** 3)

    h = adgen.grad(plain, backend="numba")
    h(y, y_hat)
    h(y, y_hat)
    saved = plain.__code__
    try:
        plain.__code__ = cubed.__code__
        assert_grad_close(h(y, y_hat), 3.0 * (y - y_hat) ** 2, rtol=1e-12)
    finally:
        plain.__code__ = saved
    assert_grad_close(h(y, y_hat), 2.0 * (y - y_hat), rtol=1e-12)


def test_a_rule_registered_later_is_used():
    y, y_hat = _data()

    def halve(v):
        return 0.5 * v

    def loss(y, y_hat):
        s = 0.0
        for i in range(len(y)):
            s += halve((y[i] - y_hat[i]) ** 2.0)
        return s

    g = adgen.grad(loss, backend="auto")
    g(y, y_hat)
    assert_grad_close(g(y, y_hat), numerical_grad(loss, (y, y_hat), 0))
    assert _fast_in_use(g)

    @adgen.rrule(halve)
    def _halve_rule(v):  # deliberately 3 times the derivative: this rule must be used
        return halve(v), lambda g: (1.5 * g,)

    # compiled again: the numba backend refuses a global with a rule, 'auto' falls back
    with pytest.warns(NumbaFallbackWarning, match="reads the global halve"):
        got = g(y, y_hat)
    assert_grad_close(got, 3.0 * numerical_grad(loss, (y, y_hat), 0))
    with pytest.raises(adgen.UnsupportedError, match="reads the global halve"):
        adgen.grad(loss, backend="numba")(y, y_hat)


def test_other_argument_types_take_the_generic_path():
    y, y_hat = _data()
    g = adgen.grad(scaled_mse, backend="numba")
    g(y, y_hat)
    g(y, y_hat)
    Y, Yh = np.stack([y, y]), np.stack([y_hat, y_hat])  # rank 2: another signature
    with pytest.raises(adgen.AdgenError):
        g(Y, Yh)
    with pytest.raises(adgen.NonDifferentiableError):
        g(np.arange(7), y_hat)  # an int array, as on the default backend
    assert_grad_close(g(y[::2], y_hat[::2]), numerical_grad(scaled_mse, (y[::2], y_hat[::2]), 0))
    assert_grad_close(g(y, y_hat), numerical_grad(scaled_mse, (y, y_hat), 0))
    with pytest.raises(adgen.AdgenError):
        g(y)  # a parameter left to its default: refused as before


@pytest.mark.parametrize("k, raises", [(3, False), (5, True), (3, False)])
def test_strict_raises_the_default_backends_error_on_the_fast_call(k, raises):
    x = np.linspace(0.5, 1.0, 6)
    g = adgen.grad(tail_then_head, backend="numba", mutation="strict")
    g(x.copy(), 3)
    g(x.copy(), 3)
    assert _fast_in_use(g)
    if raises:
        with pytest.raises(adgen.MutationError) as err:
            g(x.copy(), k)
        first = tail_then_head.__code__.co_firstlineno  # def: the capture +1, the write +3
        assert err.value.location.line == first + 3 and err.value.captured_at.line == first + 1
    else:
        assert_grad_close(g(x.copy(), k), np.r_[2.0, 2.0, 2.0, 2.0 * x[3:] + 1.0], rtol=1e-12)


def weighted_squares(x, a, k):
    s = 0.0
    for i in range(k):
        s += a * x[i] ** 2
    return s


def test_numbers_of_numpy_types_and_a_float_argument_differentiated():
    x = np.linspace(0.1, 1.0, 6)
    g = adgen.grad(weighted_squares, argnums=(0, 1), backend="numba")
    for a, k in [(np.float64(1.5), 4), (np.float64(1.5), np.int64(5)), (2.0, 3),
                 (np.float64(0.5), 6)]:
        for _ in range(3):  # the first call of each types, then the fast call
            gx, ga = g(x, a, k)
            plain = (x, float(a), int(k))
            assert_grad_close(gx, numerical_grad(weighted_squares, plain, 0))
            assert type(ga) is float
            assert ga == pytest.approx(np.sum(x[:int(k)] ** 2), rel=1e-14)
        assert _fast_in_use(g)


GAIN = 0.5  # a float global: passed to the compiled code at each call
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0])  # an array global, likewise


def weighted_by_globals(x):
    s = 0.0
    for k in range(WEIGHTS.shape[0]):
        s += GAIN * WEIGHTS[k] * x[k] ** 2
    return s


def test_globals_passed_as_data_are_read_at_each_fast_call():
    global GAIN, WEIGHTS
    x = np.linspace(0.5, 2.0, 4)
    g = adgen.grad(weighted_by_globals, backend="numba")
    g(x)
    old = (GAIN, WEIGHTS)
    try:
        for gain, weights in [(0.5, WEIGHTS), (2.0, WEIGHTS), (2.0, np.array([4.0, 3.0, 2.0, 1.0])),
                              (1.0, np.array([1.0, 0.0]))]:
            GAIN, WEIGHTS = gain, weights
            for _ in range(2):
                got = g(x)
                assert _fast_in_use(g)
                want = np.zeros(4)
                want[:len(weights)] = 2.0 * gain * weights * x[:len(weights)]
                assert_grad_close(got, want, rtol=1e-14)
                assert_grad_close(got, numerical_grad(weighted_by_globals, (x,), 0))
        WEIGHTS = np.eye(2)  # another rank: compiled again, then refused by numba's typing
        with pytest.raises(adgen.AdgenError):
            g(x)
    finally:
        GAIN, WEIGHTS = old
    assert_grad_close(g(x), 2.0 * GAIN * WEIGHTS * x, rtol=1e-14)


def checked_sum(x, k):
    if k < 0:
        raise TypeError("k must not be negative")
    s = 0.0
    for i in range(k):
        s += x[i] * x[i]
    x[0] = 2.0 * x[0]  # a change to the argument: a second run would show
    return s


def test_dtypes_ranks_and_layouts_are_checked_by_numbas_dispatcher():
    """The fast call checks that each array is an ndarray and leaves its dtype, rank and
    layout to numba's dispatcher, whose compilation is disabled: a strided view, a read-only
    array, an int array or a matrix after float vectors runs nothing there and takes the
    generic path (which compiles the layout, or refuses, as before); a TypeError the
    function itself raises is the user's, raised once, with the argument changed once."""
    y, y_hat = _data()
    g = adgen.grad(scaled_mse, argnums=(0, 1), backend="numba")
    g(y, y_hat)
    g(y, y_hat)
    assert _fast_in_use(g)
    big = np.linspace(-1.0, 2.0, 14)
    for a, b in ((big[::2], y_hat), (y, big[1::2]), (y, y_hat)):
        for got, n in zip(g(a, b), (0, 1)):
            assert_grad_close(got, numerical_grad(scaled_mse, (a.copy(), b.copy()), n))
    frozen = y.copy()
    frozen.flags.writeable = False
    assert_grad_close(g(frozen, y_hat)[0], numerical_grad(scaled_mse, (y, y_hat), 0))
    with pytest.raises(adgen.NonDifferentiableError):
        g(np.arange(7), y_hat)
    with pytest.raises(adgen.AdgenError):
        g(np.stack([y, y]), np.stack([y_hat, y_hat]))
    assert_grad_close(g(y, y_hat)[1], numerical_grad(scaled_mse, (y, y_hat), 1))
    h = adgen.grad(checked_sum, backend="numba")
    x = np.linspace(0.5, 1.5, 5)
    for _ in range(3):
        assert_grad_close(h(x.copy(), 3), np.r_[2.0 * x[:3], 0.0, 0.0], rtol=1e-12)
    assert _fast_in_use(h)
    arg = x.copy()
    with pytest.raises(TypeError, match="must not be negative"):
        h(arg, -1)
    assert np.array_equal(arg, x)  # raised before the write, and run once


def test_the_partial_calls_the_direct_form_and_anything_else_goes_back():
    """After the first call of a signature, adgen.grad's partial calls fast_call's direct
    form (the arguments as its parameters, no closure frame); keyword arguments, another
    number of arguments, other types and a registered rule go back through the closure's
    generic path, which points the partial at the direct form of the signature it ran."""
    y, y_hat = _data()
    g = adgen.grad(scaled_mse, argnums=(0, 1), backend="numba")
    first = g(y, y_hat)
    assert g.func.__name__ == "fast_direct"
    for got, n in zip(g(y, y_hat), (0, 1)):
        assert_grad_close(got, numerical_grad(scaled_mse, (y, y_hat), n))
    with pytest.raises(adgen.AdgenError):
        g(y)  # a parameter left to its default: refused as before
    with pytest.raises(adgen.AdgenError):
        g(y, y_hat=y_hat)  # by keyword: refused on the numba backend as before
    with pytest.raises(adgen.AdgenError):
        g(y, y_hat, y)
    Y, Yh = y[::2], y_hat[::2]  # another layout, then a float16 array (refused as before)
    for got, n in zip(g(Y, Yh), (0, 1)):
        assert_grad_close(got, numerical_grad(scaled_mse, (Y.copy(), Yh.copy()), n))
    with pytest.raises(adgen.AdgenError):
        g(y.astype(np.float16), y_hat)
    # a float32 array compiles another version (session 16), its gradient float32
    got = g(y.astype(np.float32), y_hat)
    assert got[0].dtype == np.float32 and got[1].dtype == np.float64
    for a, n in zip(got, (0, 1)):
        np.testing.assert_allclose(a, numerical_grad(
            scaled_mse, (y.astype(np.float32).astype(np.float64), y_hat), n), rtol=1e-5)
    again = g(y, y_hat)
    assert g.func.__name__ == "fast_direct"
    for a, b in zip(again, first):
        assert_grad_close(a, b, rtol=1e-15)
    v, gv = adgen.value_and_grad(scaled_mse, backend="numba")(y, y_hat)
    vg = adgen.value_and_grad(scaled_mse, backend="numba")
    vg(y, y_hat)
    v2, gv2 = vg(y, y_hat)
    assert v2 == pytest.approx(scaled_mse(y, y_hat), rel=1e-14)
    assert_grad_close(gv2, gv, rtol=1e-15)
    import pickle

    back = pickle.loads(pickle.dumps(g))  # pickles as adgen.grad(scaled_mse, ...)
    assert_grad_close(back(y, y_hat)[0], first[0], rtol=1e-12)


def weighted_mse(w, y, y_hat):
    s = 0.0
    for i in range(len(y)):
        s += w * (y[i] - y_hat[i]) ** 2.0
    return s


def test_a_wrapped_gradient_closure_is_not_pointed_at_the_direct_form():
    """grad of a functools.partial wraps the inner gradient closure (functools.wraps copies
    its attributes): only a partial of the closure itself is pointed at the direct form, so
    the partial's own arguments stay in the call (later calls gave the inner function one
    argument too few)."""
    import functools

    y, y_hat = _data()
    g = adgen.grad(functools.partial(weighted_mse, 2.0), argnums=(0, 1), backend="numba")
    for _ in range(3):
        gy, gyh = g(y, y_hat)
        assert_grad_close(gy, 4.0 * (y - y_hat), rtol=1e-12)
        assert_grad_close(gyh, -4.0 * (y - y_hat), rtol=1e-12)
    assert g.func.__name__ != "fast_direct"


def E0(v):  # named as the fast call's own names are: its checks must not confuse them
    return 2.0 * v


def TYPE(v):
    return v * v


def named_like_the_fast_call(y):
    s = 0.0
    for i in range(len(y)):
        s += E0(y[i]) + TYPE(y[i])
    return s


def test_globals_named_like_the_fast_calls_own_names_are_checked():
    """The fast call reads the function's builtins and global functions through the
    function's own globals (``len is E0``): a global named as one of the fast call's own
    names (E0, TYPE) is checked in its dictionary instead, and rebinding it recompiles."""
    y = np.linspace(0.2, 1.0, 5)
    g = adgen.grad(named_like_the_fast_call, backend="numba")
    for _ in range(3):
        assert_grad_close(g(y), 2.0 + 2.0 * y, rtol=1e-12)
    assert _fast_in_use(g)
    global E0, TYPE
    old_e, old_t = E0, TYPE
    try:
        def E0(v):  # noqa: F811 - rebinding the callee is the point
            return 3.0 * v

        assert_grad_close(g(y), 3.0 + 2.0 * y, rtol=1e-12)
        assert_grad_close(g(y), numerical_grad(named_like_the_fast_call, (y,), 0))

        def TYPE(v):  # noqa: F811
            return v * v * v

        g(y)
        assert_grad_close(g(y), 3.0 + 3.0 * y * y, rtol=1e-12)
    finally:
        E0, TYPE = old_e, old_t
    assert_grad_close(g(y), 2.0 + 2.0 * y, rtol=1e-12)


def test_a_callees_builtin_in_another_module_is_checked(tmp_path, monkeypatch):
    """A callee from another module reads that module's globals (its guards are looked up in
    that module's dictionary): a global shadowing the builtin it calls, bound there after the
    fast call is in use, is seen at the next call ('auto' falls back: the numba backend
    refuses the helper a callee calls)."""
    (tmp_path / "fast_call_helpers.py").write_text(
        "def helper(v):\n    return max(v, 0.0) * v\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fast_call_helpers as mod

    monkeypatch.setitem(globals(), "ext_helper", mod.helper)

    def through_helper(y):
        s = 0.0
        for i in range(len(y)):
            s += ext_helper(y[i])  # noqa: F821 - bound by the test
        return s

    y = np.linspace(-1.0, 1.0, 6) + 0.05
    g = adgen.grad(through_helper, backend="auto")
    for _ in range(3):
        assert_grad_close(g(y), 2.0 * np.maximum(y, 0.0), rtol=1e-12)
    assert _fast_in_use(g)
    monkeypatch.setattr(mod, "max", lambda a, b: 3.0 * a, raising=False)
    with pytest.warns(NumbaFallbackWarning):
        assert_grad_close(g(y), 6.0 * y, rtol=1e-12)
    assert_grad_close(g(y), numerical_grad(through_helper, (y,), 0))
    monkeypatch.delattr(mod, "max")
    assert_grad_close(g(y), 2.0 * np.maximum(y, 0.0), rtol=1e-12)
