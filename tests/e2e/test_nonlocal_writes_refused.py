"""``nonlocal n; n += 1`` in the function differentiated (a callback's call counter, the cell
of a factory) is refused at the ``nonlocal`` line, under both policies: the generated code
does not write the enclosing function's cell. The hint names what adgen follows instead for a
counter: an item of a list the factory made (``calls[0] += 1``), which this file checks
against a hand formula. (``nonlocal acc; acc = acc + v`` in a nested def of the function
differentiated, called as a statement, runs since session 29: its body is written where it is
called, tests/e2e/test_nonlocal_accumulators.py; this file checks it by hand.)
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
        nonlocal acc
        acc = acc + v
    add(np.sin(x))
    add(x)
    return np.sum(acc ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_nonlocal_write_is_refused_at_its_line(mutation):
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(counting_loss(), mutation=mutation)(X)
    assert info.value.location.line == counting_loss.__code__.co_firstlineno + 4
    assert "calls[0] += 1" in str(info.value)


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_accumulator_of_a_nested_def_is_differentiated(mutation):
    # acc = sin(x) + x: d/dx sum(acc ** 2) = 2 * acc * (cos(x) + 1)
    acc = np.sin(X) + X
    np.testing.assert_allclose(adgen.grad(accumulated, mutation=mutation)(X),
                               2 * acc * (np.cos(X) + 1.0), rtol=1e-12)


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
