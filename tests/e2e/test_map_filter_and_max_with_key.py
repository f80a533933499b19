"""``map``, ``filter`` and ``max`` / ``min`` with ``key=`` in differentiated code, as Python
programmers write them: ``sum(map(lambda t: t ** 3, v))`` was refused ("map() has no
derivative rule and adgen cannot read its source", with the advice to register a rule for
``map``), ``max(v, key=abs)`` too ("adgen's rule for builtins.max takes (a, b)"). They are the
generator expressions they stand for (``(t ** 3 for t in v)``) and the first item of
``sorted``, which adgen differentiates. Expected values: central differences
(tests/gradcheck.py) and hand formulas; save and strict."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

X = np.array([0.3, -1.2, 2.0])
W = np.array([0.5, -1.0, 2.0])
POLICIES = ["save", "strict"]


def damped(t):
    return np.sin(t) * t


def cubes(v):
    return sum(map(lambda t: t ** 3, v))


def weighted(v):
    return sum(map(lambda a, b: a * b, v, W))


def by_name(v):
    return sum(map(damped, v)) + np.sum(np.array(list(map(np.exp, v))))


def positives(v):
    return sum(filter(lambda t: t > 0, v))


def nested(v):
    total = 0.0
    for y in map(lambda t: t * 2, map(lambda t: np.tanh(t), v)):
        total = total + y ** 2
    return total


def largest(v):
    return max(map(abs, v)) * 2.0


def largest_by_size(v):
    return max(v, key=abs) * 2.0 + min(v, key=lambda t: (t - 1.0) ** 2) * 3.0


def row_with_the_largest_sum(v):
    rows = [v * 1.0, v * 2.0, -v]
    return np.sum(max(rows, key=np.sum) ** 2) + min(v[0], v[1], key=abs)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [cubes, weighted, by_name, positives, nested, largest,
                               largest_by_size, row_with_the_largest_sum])
def test_map_and_filter(f, policy):
    assert_grad_close(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0))


@pytest.mark.parametrize("policy", POLICIES)
def test_hand_values(policy):
    assert_grad_close(adgen.grad(cubes, mutation=policy)(X), 3 * X ** 2)
    assert_grad_close(adgen.grad(weighted, mutation=policy)(X), W)
    assert_grad_close(adgen.grad(positives, mutation=policy)(X), np.array([1.0, 0.0, 1.0]))
    # max(v, key=abs) is v[2] = 2.0 (times 2), min(v, key=(t - 1)^2) is v[0] = 0.3 (times 3)
    assert_grad_close(adgen.grad(largest_by_size, mutation=policy)(X),
                      np.array([3.0, 0.0, 2.0]))


@pytest.mark.parametrize("policy", POLICIES)
def test_ties_go_to_the_first_item_as_max_gives_it(policy):
    v = np.array([-2.0, 2.0, 1.0])
    assert max(v, key=abs) == -2.0  # the first of the two largest: Python's own choice
    assert_grad_close(adgen.grad(lambda v: max(v, key=abs), mutation=policy)(v),
                      np.array([1.0, 0.0, 0.0]))
    assert_grad_close(adgen.grad(lambda v: min(v, key=abs), mutation=policy)(
        np.array([1.0, 3.0, -1.0])), np.array([1.0, 0.0, 0.0]))


def test_forward_mode():
    d = np.array([0.2, 0.5, -1.0])
    _, t = adgen.jvp(cubes, (X,), (d,))
    assert np.isclose(t, np.dot(3 * X ** 2, d))


def test_a_map_of_its_own_is_the_users():
    def map(f, xs):  # noqa: A001  (the user's own map: called, not rewritten)
        return [2.0 * f(x) for x in xs]

    assert_grad_close(adgen.grad(lambda v: sum(map(lambda t: t ** 2, v)))(X), 4 * X)
