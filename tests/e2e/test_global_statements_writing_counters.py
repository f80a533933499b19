"""``global calls; calls += 1`` in a helper (a call counter, a step number, a flag) no longer
blocks the gradient (since session 29; refused before: "a global statement (writes to
globals) is not supported"). transforms/global_statements.py reads and writes such a global
as the item of the module's globals it is, in the function with the statement and in the
module's other functions that read it, live: a caller reading the counter after the helper
bumped it sees the new value, as Python does (a callback given as an argument too). Only a
counter's update may be stored (made of constants and globals, reading the global: it has
no derivative); a value computed from anything else, or a flag, is refused at the store's
line, and a global array written in place stays refused. Gradients against central
differences (each evaluation from the same state) under both policies, jvp, hessian, the
calls counted as a plain call counts them."""

import numpy as np
import pytest
from gradcheck import assert_grad_close

import adgen

X = np.array([0.5, 1.2, -0.7])
V = np.array([0.3, -1.0, 2.0])

calls = 0
steps = 0
warmed = False
W = np.ones(3)
total = 0.0


def counted_square(x):
    global calls
    calls += 1
    return x * x


def loss(x):
    return np.sum(counted_square(x) * np.sin(x))


def loss_reading_the_counter(x):
    # the helper bumps calls; the read after it sees the new value (read live)
    y = counted_square(x)
    s = np.sum(y) * calls
    for i in range(2):
        s = s + np.sum(counted_square(x[i:])) * calls
    return s


class Model:
    def forward(self, x):
        global steps
        steps = steps + 1
        return np.tanh(x) * 2.0 * (1.0 if steps > 0 else 0.0)


def warms_up(x):
    global warmed
    warmed = True  # MARK flag
    return x


def model_loss(x):
    m = Model()
    return np.sum(m.forward(x) ** 2) + np.sum(counted_square(x))


def _reset():
    global calls, steps, warmed, total
    calls, steps, warmed, total = 0, 0, False, 0.0


def _numerical(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        _reset()
        hi = f(x + e)
        _reset()
        lo = f(x - e)
        g[i] = (hi - lo) / (2 * eps)
    return g


CASES = [loss, loss_reading_the_counter, model_loss]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    expected = _numerical(f, X)
    _reset()
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()), expected)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    expected = _numerical(f, X) @ V
    _reset()
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    assert t == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_hessian_of_a_counted_helper():
    # the counter does not reach the value: every run gives the same one
    def grad_at(y):
        _reset()
        return adgen.grad(loss)(y)

    expected = np.stack([(grad_at(X + 1e-5 * e) - grad_at(X - 1e-5 * e)) / 2e-5
                         for e in np.eye(3)])
    _reset()
    np.testing.assert_allclose(adgen.hessian(loss)(X.copy()), expected, rtol=1e-5, atol=1e-6)


def test_the_counters_count_as_a_plain_call():
    _reset()
    value = loss_reading_the_counter(X.copy())
    assert calls == 3
    _reset()
    v, g = adgen.value_and_grad(loss_reading_the_counter)(X.copy())
    assert calls == 3 and v == pytest.approx(value)
    # by hand: sum(x^2) * 1 + sum(x[0:]^2) * 2 + sum(x[1:]^2) * 3
    assert_grad_close(g, X * np.array([6.0, 12.0, 12.0]))
    _reset()
    adgen.grad(model_loss)(X.copy())
    assert (calls, steps) == (1, 1)


def keeps_a_total(x):
    global total
    total = total + np.sum(x)  # MARK total
    return x * total


def writes_a_global_array(x):
    global W
    W -= 0.1 * x  # MARK W
    return np.sum(W * x)


def calls_the_writer(x):
    return writes_a_global_array(x) * 2.0


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_value_with_a_derivative_stored_in_a_global_is_refused_at_the_line(mutation):
    _reset()
    with pytest.raises(adgen.UnsupportedError, match="global total") as info:
        adgen.grad(lambda x: np.sum(keeps_a_total(x)), mutation=mutation)(X.copy())
    assert (info.value.location.file, info.value.location.line) == (__file__, _line("# MARK total"))
    assert total == 0.0  # refused before it ran


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_global_array_written_in_place_is_refused(mutation):
    before = W.copy()
    with pytest.raises(adgen.UnsupportedError, match="global W") as info:
        adgen.grad(calls_the_writer, mutation=mutation)(X.copy())
    assert (info.value.location.file, info.value.location.line) == (__file__, _line("# MARK W"))
    np.testing.assert_array_equal(W, before)


def counted_callback(v):
    global calls  # MARK callback
    calls += 1
    return v * v


def applies(x, fn):
    return np.sum(fn(x) * np.sin(x))


def applies_and_reads_the_count(x, fn):
    y = fn(x)
    return np.sum(y) * calls  # calls read as it was when the call started, if not refused


def loss_cb(x):
    return applies(x, counted_callback)


def loss_read(x):
    return applies_and_reads_the_count(x, counted_callback)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callback_counting_is_followed_where_its_caller_does_not_read_the_count(mutation):
    expected = _numerical(loss_cb, X)
    _reset()
    assert_grad_close(adgen.grad(loss_cb, mutation=mutation)(X.copy()), expected)
    assert calls == 1


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callback_counting_for_a_caller_reading_the_count_is_read_live(mutation):
    # the caller was compiled before the callback was found: it read calls as the value it
    # had when the call started (0.0, a zero gradient, silently) until every reader in the
    # module read a counter live
    _reset()
    v, g = adgen.value_and_grad(loss_read, mutation=mutation)(X.copy())
    assert calls == 1 and v == pytest.approx(np.sum(X ** 2))
    assert_grad_close(g, 2 * X)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_flag_set_in_a_global_is_refused_at_the_line(mutation):
    # (not a counter's update: its readers would keep the value taken at the call's start)
    _reset()
    with pytest.raises(adgen.UnsupportedError, match="global warmed") as info:
        adgen.grad(lambda x: np.sum(warms_up(x) ** 2), mutation=mutation)(X.copy())
    assert (info.value.location.file, info.value.location.line) == (__file__, _line("# MARK flag"))
