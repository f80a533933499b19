"""A ``collections.deque`` keeping values with a derivative (a window of recent states,
``deque(maxlen=2)``) read back into the loss. Under grad its adjoint had no items: a raw
``TypeError: 'NoneType' object does not support item assignment`` from adgen's runtime
before session 21. It is refused at the line, saying to keep a list (``q = q[-n:]`` for a
bounded one), whose gradient is right; a deque of indices runs.
"""

import collections

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.2])


def window_in_a_deque(x):
    recent = collections.deque(maxlen=2)
    for i in range(3):
        recent.append(x * (i + 1))
    return np.sum(recent[0] * recent[1])


def window_in_a_list(x):
    recent = []
    for i in range(3):
        recent.append(x * (i + 1))
        recent = recent[-2:]
    return np.sum(recent[0] * recent[1])


def indices_in_a_deque(x):
    todo = collections.deque([0, 2, 1])
    s = 0.0
    while todo:
        i = todo.popleft()
        s = s * 0.5 + x[i] ** 2
    return s


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_deque_of_values_refused_at_the_line(policy):
    with pytest.raises(UnsupportedError, match="collections.deque") as info:
        adgen.grad(window_in_a_deque, mutation=policy)(X)
    assert info.value.location.file == __file__
    assert "a list" in str(info.value)


@pytest.mark.parametrize("f", [window_in_a_list, indices_in_a_deque])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_the_rewrite_and_a_deque_of_indices_run(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-8)
