"""Buffers of other dtypes than float64 (issue 12): float16/float32 buffers filled in place,
integer and bool buffers (a store truncates: no gradient), conversions with ``astype``.

The gradients are hand-derived from the plain function's own values (the rounded buffer
contents a plain call computes), or central differences of the same code in float64; every
case runs under both policies and checks the arguments' final state.
"""

import numpy as np
import pytest
from harness import assert_close, assert_same_state, call_plain, fd_grad, fresh

import adgen

FLOATS = ["float16", "float32", "float64"]
INTS = ["int64", "int32", "uint8", "bool"]
POLICIES = ["save", "strict"]
X = np.array([0.75, 1.5, 2.25])


def _truncates(dt: str) -> bool:
    return np.dtype(dt).kind in "biu"


def loop_fill(x, dt):
    out = np.empty(3, dtype=dt)
    for i in range(3):
        out[i] = x[i] * 2.0
    return np.sum(out * x)


def slice_fill(x, dt):
    out = np.empty(3, dtype=dt)
    out[:] = x * 2.0
    return np.sum(out * x)


def view_fill(x, dt):
    out = np.zeros(4, dtype=dt)
    v = out[1:]
    v[:] = x * 2.0
    return np.sum(out[1:] * x)


def fill_method(x, dt):
    out = np.empty(3, dtype=dt)
    out.fill(x[1] * 2.0)
    return np.sum(out * x)


def _buffer(x: np.ndarray, dt: str, value: np.ndarray) -> np.ndarray:
    """What the plain function stores: ``value`` converted to ``dt``, back as floats."""
    return np.asarray(value).astype(dt).astype(np.float64)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("fn", [loop_fill, slice_fill, view_fill])
def test_buffer_of_dtype_filled(fn, dt: str, mutation: str) -> None:
    # d/dx sum(out * x) with out = convert(2x): out + x * d out/dx, where d out/dx is 2 for a
    # float buffer (rounding counts as the identity) and 0 for an integer or bool one
    out = _buffer(X, dt, 2.0 * X)
    expected = out + (0.0 if _truncates(dt) else 2.0) * X
    g = adgen.grad(fn, mutation=mutation)(X.copy(), dt)
    assert_close(g, expected, f"{fn.__name__} with a {dt} buffer", rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_fill_method_of_dtype(dt: str, mutation: str) -> None:
    out = float(_buffer(X, dt, 2.0 * X[1]))
    expected = np.full(3, out)
    if not _truncates(dt):
        expected[1] += 2.0 * np.sum(X)
    g = adgen.grad(fill_method, mutation=mutation)(X.copy(), dt)
    assert_close(g, expected, f"fill of a {dt} buffer", rtol=1e-12)


def add_in_place(x, dt):
    out = np.ones(3, dtype=dt)
    out += x
    return np.sum(out * x)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", FLOATS)
def test_add_in_place_of_dtype(dt: str, mutation: str) -> None:
    out = (np.ones(3, dtype=dt) + X).astype(np.float64)
    g = adgen.grad(add_in_place, mutation=mutation)(X.copy(), dt)
    assert_close(g, out + X, f"out += x with a {dt} buffer", rtol=1e-12)


def write_argument(x):
    x[0] = 0.0
    return np.sum(x * x)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", ["float16", "float32"])
def test_argument_of_dtype_written(dt: str, mutation: str) -> None:
    x = X.astype(dt)
    _, (expected_x,) = call_plain(write_argument, (x,))
    g = adgen.grad(write_argument, mutation=mutation)(x)
    assert_close(g, 2.0 * expected_x.astype(np.float64), "gradient", rtol=1e-12)
    assert_same_state(x, expected_x)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("how", ["astype", "asarray", "array"])
def test_conversion(how: str, dt: str, mutation: str) -> None:
    def astype(x, dt):
        return np.sum(x.astype(dt) * x)

    def asarray(x, dt):
        return np.sum(np.asarray(x, dtype=dt) * x)

    def array(x, dt):
        return np.sum(np.array(x, dtype=dt) * x)

    fn = {"astype": astype, "asarray": asarray, "array": array}[how]
    conv = _buffer(X, dt, X)
    expected = conv + (0.0 if _truncates(dt) else 1.0) * X
    g = adgen.grad(fn, mutation=mutation)(X.copy(), dt)
    assert_close(g, expected, f"{how} to {dt}", rtol=1e-12)


def conv_layer(w, x):
    n = x.shape[0] - w.shape[0] + 1
    out = np.empty((n, x.shape[1]), dtype=x.dtype)
    for i in range(n):
        out[i, :] = np.sum(w[:, None] * x[i:i + w.shape[0], :], axis=0)
    return np.sum(np.tanh(out))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", ["float16", "float32"])
def test_conv_layer_in_low_precision(dt: str, mutation: str) -> None:
    rng = np.random.default_rng(7)
    w = rng.normal(size=3).astype(dt)
    x = (0.5 * rng.normal(size=(8, 4))).astype(dt)
    # central differences of the same code in float64, at the same values
    fd = fd_grad(conv_layer, (w.astype(np.float64), x.astype(np.float64)), (0, 1))
    g = adgen.grad(conv_layer, argnums=(0, 1), mutation=mutation)(*fresh((w, x)))
    rtol = 2e-3 if dt == "float32" else 5e-2
    for got, want in zip(g, fd):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.max(np.abs(want)))


@pytest.mark.parametrize("mutation", POLICIES)
def test_reinterpreting_view_is_refused(mutation: str) -> None:
    # an argument whose float64 elements view a float32 buffer (two elements each): adjoints
    # are mapped element by element, which cannot map these
    x = np.zeros(6, dtype=np.float32).view(np.float64)
    x[:] = X

    def f(x):
        x[0] = 1.0
        return np.sum(x * x)

    with pytest.raises(adgen.AdgenError, match="element by element") as info:
        adgen.grad(f, mutation=mutation)(x)
    loc = info.value.location
    assert loc is not None and loc.file == __file__ and "x" in loc.source_line


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("how", ["full", "full_like", "full_like_of"])
def test_full_of_dtype(how: str, dt: str, mutation: str) -> None:
    def full(x, dt):
        return np.sum(np.full(3, x[0], dtype=dt) * x)

    def full_like(x, dt):
        return np.sum(np.full_like(x, x[0], dtype=dt) * x)

    def full_like_of(x, dt):
        # without dtype=: the prototype's dtype
        return np.sum(np.full_like(np.zeros(3, dtype=dt), x[0]) * x)

    fn = {"full": full, "full_like": full_like, "full_like_of": full_like_of}[how]
    filled = _buffer(X, dt, np.full(3, X[0]))
    expected = filled.copy()
    if not _truncates(dt):
        expected[0] += np.sum(X)
    g = adgen.grad(fn, mutation=mutation)(X.copy(), dt)
    assert_close(g, expected, f"{how} of {dt}", rtol=1e-12)
