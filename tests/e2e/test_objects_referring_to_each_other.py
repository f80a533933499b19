"""Arguments that refer to themselves, as a tree's nodes and their parents do: walking such an
argument attribute by attribute never ended (RecursionError from grad, whatever argnums)."""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError


class Node:
    def __init__(self, w, parent=None):
        self.w = w
        self.parent = parent
        self.children = []
        if parent is not None:
            parent.children.append(self)


def tree():
    root = Node(np.array([1.0, -2.0, 0.5]))
    return root, Node(np.array([2.0, 0.25, -1.0]), root)


def weighted(x, node):
    return np.sum(x * node.w) + np.sum(np.sin(x) * node.parent.w)


def test_gradient_of_the_array_beside_a_node_with_a_parent():
    root, child = tree()
    x = np.array([0.3, -0.7, 1.1])
    g = adgen.grad(weighted)(x, child)
    np.testing.assert_allclose(g, child.w + np.cos(x) * root.w, rtol=1e-12)


def test_gradient_with_respect_to_the_node_itself():
    root, child = tree()
    x = np.array([0.3, -0.7, 1.1])
    g = adgen.grad(weighted, argnums=1)(x, child)
    np.testing.assert_allclose(g.w, x, rtol=1e-12)  # d/d child.w
    np.testing.assert_allclose(g.parent.w, np.sin(x), rtol=1e-12)  # d/d root.w


def relax(x, node):
    node.w[1:] += x[1:] * node.w[:-1]  # in place: the old node.w is read by the gradient
    return np.sum(node.w ** 2) + np.sum(x * node.parent.w)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_array_of_the_node_written_in_place(mutation):
    x = np.array([0.3, -0.7, 1.1])
    _, child = tree()

    def at(x):
        _, c = tree()
        return relax(x, c)

    if mutation == "strict":
        with pytest.raises(adgen.MutationError):
            adgen.grad(relax, mutation=mutation)(x.copy(), child)
        return
    g = adgen.grad(relax, mutation=mutation)(x.copy(), child)
    np.testing.assert_allclose(g, numerical_grad(at, (x,), 0), rtol=1e-6, atol=1e-8)


def through_the_cycle(x, node):
    return np.sum(x * node.parent.children[0].w)


def test_a_read_through_the_cycle_is_refused_not_lost():
    _, child = tree()
    with pytest.raises(UnsupportedError, match="refers to itself"):
        adgen.grad(through_the_cycle, argnums=1)(np.ones(3), child)
