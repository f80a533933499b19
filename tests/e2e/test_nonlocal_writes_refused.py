"""``nonlocal n; n += 1`` (a callback's call counter) and ``nonlocal acc; acc = acc + v`` (a
value with a derivative) are refused at the ``nonlocal`` line, under both policies: the
generated code does not write the enclosing function's cell. The hint names what adgen
follows instead for a counter: an item of a list the factory made (``calls[0] += 1``), which
this file checks against a hand formula.
"""

import numpy as np
import pytest

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.1])
POLICIES = ["save", "strict"]


def counting_loss():
    n = 0

    def loss(x):
        nonlocal n  # refused: the cell is not written
        n += 1
        return np.sum(x ** 2)
    return loss


def accumulated(x):
    acc = 0.0

    def add(v):
        nonlocal acc  # refused
        acc = acc + v
    add(np.sin(x))
    add(x)
    return np.sum(acc ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, line", [(counting_loss(), 4), (accumulated, 4)])
def test_a_nonlocal_write_is_refused_at_its_line(fn, line, mutation):
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(fn, mutation=mutation)(X)
    first = (counting_loss if fn.__name__ == "loss" else accumulated).__code__.co_firstlineno
    assert info.value.location.line == first + line
    assert "calls[0] += 1" in str(info.value)


def counting_loss_in_a_list():
    calls = [0]

    def loss(x):
        calls[0] += 1
        return np.sum(x ** 2)
    return loss, calls


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_counter_the_hint_names_is_followed(mutation):
    loss, calls = counting_loss_in_a_list()
    np.testing.assert_allclose(adgen.grad(loss, mutation=mutation)(X), 2 * X)
    np.testing.assert_allclose(adgen.grad(loss, mutation=mutation)(X), 2 * X)
    assert calls == [2]
