"""``np.add.reduceat`` (segment sums) and ``sliding_window_view`` (moving windows), as a user
writes them, and the views whose elements share memory.

Both had no rule (MissingRuleError). ``sliding_window_view`` is a read-only view of its
argument whose windows overlap; a view like it (``np.broadcast_to`` too) read after its
array was written in place got the shadow of the same view, where overlapping elements add
one cotangent instead of one each: a silently wrong gradient under "save" (239 off for
np.broadcast_to; the sliding window was not even taken for a view of its array, whose
holder NumPy keeps in ``.base``). That is now refused; strict refuses it at the write.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad
from numpy.lib.stride_tricks import sliding_window_view

import adgen

RNG = np.random.default_rng(27)
X = RNG.normal(size=10)
IMG = RNG.normal(size=(5, 6))


def binned_energy(x):
    # ragged segments: [0:3], [3:4], [4:8], [8:]
    sums = np.add.reduceat(x, [0, 3, 4, 8])
    return np.sum(np.tanh(sums) ** 2 * np.arange(1.0, 5.0))


def rows_by_group(m):
    return np.sum(np.add.reduceat(m, [0, 2, 2], axis=1) ** 3)


def moving_average_loss(x):
    windows = sliding_window_view(x, 4)
    smooth = windows.mean(axis=-1)
    return np.sum((smooth - x[3:]) ** 2) + np.max(windows[2])


def patches(img):
    p = sliding_window_view(img, (2, 3))
    return np.sum(np.sin(p) * np.arange(6.0).reshape(2, 3))


def written_after_the_window(x):
    w = sliding_window_view(x, 3)
    s = np.sum(w ** 2)
    x *= 2.0
    return s + np.sum(w ** 3)


def written_after_broadcast(x):
    w = np.broadcast_to(x, (3, x.size))
    s = np.sum(w ** 2)
    x *= 2.0
    return s + np.sum(w ** 3 * np.arange(x.size))


def written_through_the_window(x):
    w = sliding_window_view(x, 3)
    w[0, 0] = 1.0
    return np.sum(w)


def writeable_windows(x):
    w = sliding_window_view(x, 3, writeable=True)
    return np.sum(w ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, arg", [(binned_energy, X), (rows_by_group, IMG),
                                    (moving_average_loss, X), (patches, IMG)])
def test_gradients_against_central_differences(f, arg, mutation):
    x = arg.copy()
    got = adgen.grad(f, mutation=mutation)(x)
    assert_grad_close(got, numerical_grad(f, (arg.copy(),), 0))
    np.testing.assert_array_equal(x, arg)  # the argument is left as it was


@pytest.mark.parametrize("f, arg", [(binned_energy, X), (rows_by_group, IMG),
                                    (moving_average_loss, X), (patches, IMG)])
def test_forward_mode(f, arg):
    v = RNG.normal(size=arg.shape)
    _, tangent = adgen.jvp(f, (arg.copy(),), (v,))
    assert tangent == pytest.approx(np.sum(numerical_grad(f, (arg.copy(),), 0) * v), rel=1e-6)


def test_hessian_of_segment_sums():
    x = X[:9].copy()
    h = adgen.hessian(binned_energy)(x)
    by_fd = np.stack([numerical_grad(lambda v, i=i: adgen.grad(binned_energy)(v)[i], (x,), 0)
                      for i in range(x.size)])
    np.testing.assert_allclose(h, by_fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", [written_after_the_window, written_after_broadcast])
def test_an_overlapping_view_read_after_its_array_is_written_is_refused(f):
    with pytest.raises(adgen.UnsupportedError, match="share memory"):
        adgen.grad(f, mutation="save")(X.copy())
    with pytest.raises(adgen.MutationError, match=r"x \*= 2.0 overwrites w"):
        adgen.grad(f, mutation="strict")(X.copy())


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_write_through_the_window_fails_as_in_numpy(mutation):
    with pytest.raises(ValueError, match="read-only"):
        written_through_the_window(X.copy())
    with pytest.raises(ValueError, match="read-only"):
        adgen.grad(written_through_the_window, mutation=mutation)(X.copy())


def test_writeable_windows_are_refused_at_the_line():
    with pytest.raises(adgen.UnsupportedError, match="writeable") as err:
        adgen.grad(writeable_windows)(X.copy())
    assert err.value.location.source_line.strip().startswith("w = sliding_window_view")
