"""A list, dict or object handed to a function twice (``rescale(p, p)``, ``rescale(p, [p])``,
a second argument holding the first: ``h.inner = p``) where the function changes one of them
in place and reads the other.

The adjoint of a container follows the parameter's name: adgen compiles a function for
separate containers. ``p.a = p.a * 3.0; return np.sum(q.a ** 2)`` with ``q`` the same
object had the gradient 1.8 x where central differences give 18 x, with no error (a dict:
the same; a method ``self.a = self.a * np.sum(other.a)`` called ``p.scale_by(p)`` from a
helper reading ``q.a`` after it: 3.2 for 15.1). The call is refused now, at the line of the
write, under both policies; separate objects get their gradients as before. Expected values:
central differences (tests/gradcheck.py).
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import MutationError

X = np.array([0.3, -1.2, 2.0])
POLICIES = ["save", "strict"]


class Particle:
    def __init__(self, a):
        self.a = a

    def scale_by(self, other):
        self.a = self.a * np.sum(other.a)
        return self


def rescale(p, q):
    p.a = p.a * 3.0
    return np.sum(q.a ** 2)


def rescale_items(d, e):
    d["w"] = d["w"] * 3.0
    return np.sum(e["w"] ** 2)


def rescale_first(p, group):
    p.a = p.a * 3.0
    return np.sum(group[0].a ** 2)


def interact(p, q):
    p.scale_by(q)
    return np.sum(p.a ** 2) + np.sum(q.a)


def same_object(x):
    p = Particle(x)
    return rescale(p, p)


def same_dict(x):
    d = {"w": x}
    return rescale_items(d, d)


def in_a_list(x):
    p = Particle(x)
    return rescale_first(p, [p])


def held_by_the_other(x):
    p = Particle(x)
    h = Particle(0.0)
    h.inner = p
    return rescale(p, h.inner) + rescale_held(p, h)


def rescale_held(p, h):
    p.a = p.a * 0.5
    return np.sum(h.inner.a)


def through_a_method(x):
    p = Particle(x)
    return interact(p, p)


def separate(x):
    p = Particle(x)
    q = Particle(np.sin(x))
    d = {"w": x * 2.0}
    return rescale(p, q) + rescale_items(d, {"w": x}) + rescale_first(q, [p]) + \
        rescale_held(q, h_of(p))


def h_of(p):
    h = Particle(0.0)
    h.inner = p
    return h


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f, line", [
    (same_object, rescale), (same_dict, rescale_items), (in_a_list, rescale_first),
    (held_by_the_other, rescale), (through_a_method, interact)])
def test_one_container_passed_twice_is_refused(f, line, mutation):
    with pytest.raises(MutationError, match="passed twice|same object as|holds") as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert info.value.location.line == line.__code__.co_firstlineno + 1


@pytest.mark.parametrize("mutation", POLICIES)
def test_separate_containers(mutation):
    g = adgen.grad(separate, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(separate, (X.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_same_object_as_two_arguments_of_grad(mutation):
    p = Particle(X.copy())
    with pytest.raises(MutationError, match="q is the same object as p"):
        adgen.grad(rescale, argnums=(0, 1), mutation=mutation)(p, p)
    g = adgen.grad(rescale, argnums=(0, 1), mutation=mutation)(Particle(X.copy()),
                                                               Particle(2 * X))
    assert_grad_close(g[0].a, np.zeros(3))
    assert_grad_close(g[1].a, 4 * X)
