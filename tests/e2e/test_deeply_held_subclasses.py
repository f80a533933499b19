"""An np.matrix or masked array held more than two levels deep in a global object whose method
the function calls (``layer.apply(v)`` reading ``self.inner.deep.M``, or
``self.items['a'][0].M``) was not checked (runtime.plain_result looked two levels down), and
``M + v`` gave a silently wrong gradient ([3, 4, 4] for [3, 0, 4]: the masked element's
derivative is 0). The whole object is checked now (each object once, so an object holding
itself ends): a refusal naming the path, at the user's line; plain arrays at any depth keep
their gradients (central differences, both policies)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

V = np.array([0.5, 1.5, -1.0])
MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])


class Deep:
    def __init__(self, m):
        self.M = m


class Inner:
    def __init__(self, m):
        self.deep = Deep(m)


class Layer:
    """A model whose weights sit three attributes down, as configuration trees do."""

    def __init__(self, m):
        self.inner = Inner(m)
        self.parent = self  # an object that holds itself: the check must end

    def apply(self, v):
        return self.inner.deep.M + v


class Table:
    def __init__(self, m):
        self.items = {"a": [Deep(m)]}

    def apply(self, v):
        return self.items["a"][0].M - v


masked_layer = Layer(MASKED)
matrix_layer = Layer(np.matrix([[1.0, 2.0, 3.0]]))
masked_table = Table(MASKED)
plain_layer = Layer(np.array([1.0, 2.0, 3.0]))
plain_table = Table(np.array([1.0, 2.0, 3.0]))


def through_masked_layer(v):
    return np.sum(np.asarray(masked_layer.apply(v)) ** 2)  # MARK layer


def through_matrix_layer(v):
    return np.sum(np.asarray(matrix_layer.apply(v)) ** 2)  # MARK matrix


def through_masked_table(v):
    return np.sum(np.asarray(masked_table.apply(v)) ** 2)  # MARK table


def through_plain_layer(v):
    return np.sum(np.asarray(plain_layer.apply(v)) ** 2)


def through_plain_table(v):
    return np.sum(np.asarray(plain_table.apply(v)) ** 2)


def _line(mark):
    import inspect

    lines = inspect.getsource(inspect.getmodule(_line)).splitlines()
    return 1 + next(i for i, text in enumerate(lines) if text.endswith(mark))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, path, mark", [
    (through_masked_layer, "masked_layer.inner.deep.M", "# MARK layer"),
    (through_matrix_layer, "matrix_layer.inner.deep.M", "# MARK matrix"),
    (through_masked_table, "masked_table.items['a'][0].M", "# MARK table"),
], ids=["masked", "matrix", "dict_and_list"])
def test_a_deeply_held_subclass_is_refused_at_the_line(f, path, mark, mutation):
    with pytest.raises(adgen.NonDifferentiableError) as err:
        adgen.grad(f, mutation=mutation)(V.copy())
    assert path in err.value.message and "ndarray subclass" in err.value.message
    assert err.value.location.line == _line(mark)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [through_plain_layer, through_plain_table],
                         ids=["layer", "dict_and_list"])
def test_plain_arrays_at_any_depth_keep_their_gradient(f, mutation):
    check_grad(f, (V,), mutation=mutation)


def test_the_check_stops_in_a_large_object():
    """A global object holding a long chain of objects: the walk ends (each object once, a
    bounded number of values), and the gradient is right."""
    class Node:
        def __init__(self, nxt):
            self.next = nxt
            self.w = np.ones(3)

    head = None
    for _ in range(20000):
        head = Node(head)
    holder = Layer(np.array([1.0, 2.0, 3.0]))
    holder.inner.deep.chain = head

    def f(v):
        return np.sum(holder.apply(v) ** 2)

    np.testing.assert_allclose(adgen.grad(f)(V.copy()), 2.0 * (np.array([1.0, 2.0, 3.0]) + V))
