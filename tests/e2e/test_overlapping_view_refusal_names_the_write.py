"""A view whose elements share memory (np.broadcast_to, sliding_window_view), read by the
gradient and then overwritten by an in-place write of its array, is refused under both
policies. Under mutation="strict" the MutationError is raised at the write, naming the
read; under "save" the refusal came from the pullback, at the read's line, and named no
write (session 15). It now names the write's line and construct, at the write, and the
read's line, as strict does (session 16)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import adgen

X = np.linspace(0.2, 1.4, 7)


def doubled_after_broadcast(x):
    w = np.broadcast_to(x, (3, x.size))
    s = np.sum(w ** 2)
    x *= 2.0
    return s + np.sum(x)


def scaled_after_windows(x):
    y = x * 1.0
    w = sliding_window_view(y, 3)
    s = np.sum(np.sin(w))
    y[2:4] = 0.5
    return s + np.sum(y ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, read, write, construct", [
    (doubled_after_broadcast, 2, 3, "x *= 2.0"),
    (scaled_after_windows, 3, 4, "y[2:4] = 0.5"),
])
def test_refusal_at_the_write_naming_the_read(f, read, write, construct, mutation):
    first = f.__code__.co_firstlineno
    with pytest.raises(adgen.AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert err.value.location.line == first + write
    assert err.value.location.file.endswith("test_overlapping_view_refusal_names_the_write.py")
    text = str(err.value)
    assert construct in text
    assert f"line {first + read}" in text
    if mutation == "save":
        assert "share memory" in text
