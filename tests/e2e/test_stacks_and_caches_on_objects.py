"""A user's Stack class (``self.items.pop()`` in a method) and a per-layer cache kept on the
object (``self.cache[i] = h`` in a method called in a loop over layers), as users write them.

- ``self.items.pop()`` of a list attribute stays refused at the line (adgen cannot follow an
  in-place pop of a list other names may reach); the hint now spells the rewrite in the
  user's names (``v = self.items[-1]; self.items = self.items[:-1]``), which is checked here
  to be differentiated (grad under both policies and jvp against central differences; its
  hessian too since session 29, refused at the line before).
- A parameter annotated with a class of the user's that defines ``pop`` (``def f(x, s:
  Stack)``) has ``s.pop()`` called as ``Stack.pop(s)`` (since session 28; it was refused as
  a list's pop, "the caller's list would change"); without an annotation the refusal stays
  and says to annotate.
- ``self.cache[i] = h`` of a dict attribute stays refused at the line, with the rewrite
  (``self.cache.append(h)``) checked here under grad and jvp.
"""

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, 1.0, -2.0])


class ListStack:
    def __init__(self):
        self.items = []

    def push(self, v):
        self.items.append(v)

    def pop(self):
        return self.items.pop()  # MARK pop


class Stack:
    """The rewrite the refusal spells."""

    def __init__(self):
        self.items = []

    def push(self, v):
        self.items.append(v)

    def pop(self):
        v = self.items[-1]
        self.items = self.items[:-1]
        return v


def with_a_stack(x):
    s = Stack()
    for i in range(3):
        s.push(x * (i + 1.0))
    a = s.pop()
    b = s.pop()
    return np.sum(a * np.sin(b)) + np.sum(s.pop())


def with_a_list_stack(x):
    s = ListStack()
    for i in range(3):
        s.push(x * (i + 1.0))
    a = s.pop()
    b = s.pop()
    return np.sum(a * np.sin(b)) + np.sum(s.pop())


def _line(mark):
    return next(n for n, text in enumerate(open(__file__), 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_in_place_pop_of_a_list_attribute_is_refused_with_the_rewrite(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(with_a_list_stack, mutation=mutation)(X.copy())
    assert info.value.location.file == __file__
    assert info.value.location.line == _line("# MARK pop")
    assert "v = self.items[-1]; self.items = self.items[:-1]" in info.value.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewrite_is_differentiated(mutation):
    g = adgen.grad(with_a_stack, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(with_a_stack, X.copy()), rtol=1e-6, atol=1e-8)
    # by hand: a = 3x, b = 2x, c = x: sum(3x sin 2x) + sum(x)
    np.testing.assert_allclose(g, 3 * np.sin(2 * X) + 6 * X * np.cos(2 * X) + 1.0,
                               rtol=1e-12)


def test_the_rewrite_under_jvp():
    _, t = adgen.jvp(with_a_stack, (X.copy(),), (V,))
    np.testing.assert_allclose(t, central(with_a_stack, X.copy()) @ V, rtol=1e-6, atol=1e-8)


def test_the_rewrite_at_second_order():
    # refused at a line until session 29 (push appends to a list its object holds, which
    # second derivatives refused by the names of the list methods its code called)
    h = adgen.hessian(with_a_stack)(X.copy())
    g = adgen.grad(with_a_stack)
    rows = np.stack([(g(X + 1e-5 * e) - g(X - 1e-5 * e)) / 2e-5 for e in np.eye(X.size)])
    np.testing.assert_allclose(h, rows, rtol=1e-6, atol=1e-7)
    # by hand: d2/dx2 of 3x sin 2x + x, per element
    np.testing.assert_allclose(h, np.diag(12 * np.cos(2 * X) - 12 * X * np.sin(2 * X)),
                               rtol=1e-12, atol=1e-12)


def on_an_annotated_parameter(x, s: Stack):
    s.push(x)
    s.push(np.sin(x))
    return np.sum(s.pop() * s.pop())


def on_a_parameter(x, s):
    s.push(x)
    s.push(np.sin(x))
    return np.sum(s.pop() * s.pop())  # MARK parameter


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_pop_of_an_annotated_parameter_is_its_classes(mutation):
    def f(x):
        return on_an_annotated_parameter(x, Stack())

    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, np.sin(X) + X * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(g, central(f, X.copy()), rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, central(f, X.copy()) @ V, rtol=1e-6, atol=1e-8)


def test_pop_of_a_parameter_of_unknown_class_says_to_annotate():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(lambda x: on_a_parameter(x, Stack()))(X.copy())
    assert info.value.location.line == _line("# MARK parameter")
    assert "s: YourClass" in info.value.hint


class DictCache:
    def __init__(self, n):
        self.cache = {}
        self.W = [np.eye(3) * (0.5 + i) + 0.1 for i in range(n)]
        self.n = n

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.cache[i] = h  # MARK cache
        return h


class ListCache(DictCache):
    def __init__(self, n):
        super().__init__(n)
        self.cache = []

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.cache.append(h)
        return h


def cached(x):
    net = ListCache(3)
    h = x
    for i in range(net.n):
        h = net.layer(i, h)
    return np.sum(h) + np.sum(net.cache[0] ** 2)


def cached_in_a_dict(x):
    net = DictCache(3)
    h = x
    for i in range(net.n):
        h = net.layer(i, h)
    return np.sum(h) + np.sum(net.cache[0] ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_dict_cache_is_refused_at_the_line_and_the_list_is_differentiated(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(cached_in_a_dict, mutation=mutation)(X.copy())
    assert info.value.location.line == _line("# MARK cache")
    assert "self.acts.append(h)" in info.value.hint
    g = adgen.grad(cached, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(cached, X.copy()), rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(cached, (X.copy(),), (V,))
    np.testing.assert_allclose(t, central(cached, X.copy()) @ V, rtol=1e-6, atol=1e-8)
