"""Operators on objects of the user's classes (``Vec.__add__``, ``__mul__``, ``__getitem__``,
``__neg__``, reflected ``__rmul__``) run the class's methods, as Python does, and get their
gradient through them.

adgen read ``p + q`` as array arithmetic and ``p[0]`` as an item of a container whatever the
operands were: ``(Vec(v) + Vec(2 * v)).norm2()`` had the gradient 0 with no error, so did
``Vec(v)[0]`` and ``Affine(v) + 1.0`` (an ``__add__`` returning an array); ``p * 3.0``,
``-p``, ``s - p`` and ``p[1:]`` crashed in the pullback with a TypeError. Expected values:
central differences of the plain functions (tests/gradcheck.py) and hand formulas.
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -1.2, 2.0])
POLICIES = ["save", "strict"]


class Vec:
    """A vector with the arithmetic of a small physics code."""

    def __init__(self, a):
        self.a = a

    def __add__(self, other):
        return Vec(self.a + (other.a if isinstance(other, Vec) else other))

    def __radd__(self, other):
        return Vec(other + self.a)

    def __sub__(self, other):
        return Vec(self.a - (other.a if isinstance(other, Vec) else other))

    def __rsub__(self, other):
        return Vec(other - self.a)

    def __mul__(self, other):
        if isinstance(other, Vec):
            return np.sum(self.a * other.a)  # the dot product: a number
        return Vec(self.a * other)

    def __rmul__(self, other):
        return Vec(other * self.a)

    def __truediv__(self, k):
        return Vec(self.a / k)

    def __neg__(self):
        return Vec(-self.a)

    def __getitem__(self, i):
        return self.a[i]

    def norm2(self):
        return np.sum(self.a ** 2)


class Affine:
    """Operators that return plain arrays."""

    def __init__(self, a):
        self.a = a

    def __add__(self, other):
        return self.a + other

    def __mul__(self, other):
        return self.a * other

    def __pow__(self, k):
        return self.a ** k


class Doubled(Vec):
    """A subclass whose reflected add Python calls before Vec.__add__."""

    def __radd__(self, other):
        return Doubled(2 * self.a + other.a)


def sum_of_two(v):
    p = Vec(v)
    q = Vec(2 * v)
    return (p + q).norm2()


def first_item(v):
    return Vec(v)[0] * 2.0


def array_result(v):
    return np.sum(Affine(v) + 1.0) + np.sum(Affine(v) * v) + np.sum(Affine(v) ** 2)


def chained(v):
    p = Vec(v)
    q = Vec(np.sin(v))
    r = (p + q) * 2.0 - q / 3.0
    return r.norm2() + p * q + (-p)[2] + np.sum((3.0 * p)[1:])


def reflected(v, s):
    p = Vec(v)
    return (s - p).norm2() + (1.0 - p).norm2() + (s * p).norm2()


def relaxed(v):
    p = Vec(v)
    for _ in range(3):
        p = p * 0.5 + Vec(v ** 2)
    return p.norm2()


def with_subclass(v):
    return (Vec(v) + Doubled(v * 0.5)).norm2()


def given_object(p, v):
    return (p * 2.0 + v).norm2() + p * p


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [sum_of_two, first_item, array_result, chained, relaxed,
                               with_subclass])
def test_operators_of_a_local_object(f, policy):
    expected = numerical_grad(f, (X,), 0)
    assert_grad_close(adgen.grad(f, mutation=policy)(X), expected)


@pytest.mark.parametrize("policy", POLICIES)
def test_hand_values(policy):
    # (v + 2v).norm2() = 9 sum(v^2): 18 v; Vec(v)[0] * 2: 2 at item 0
    assert_grad_close(adgen.grad(sum_of_two, mutation=policy)(X), 18 * X)
    assert_grad_close(adgen.grad(first_item, mutation=policy)(X), np.array([2.0, 0, 0]))
    # Doubled.__radd__ runs: (2 * 0.5 v + v) = 2v, norm2 = 4 sum(v^2): 8 v
    assert_grad_close(adgen.grad(with_subclass, mutation=policy)(X), 8 * X)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_number_on_the_left(policy):
    check_grad(reflected, (X, 0.7), (0, 1), mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("policy", POLICIES)
def test_an_object_given_as_an_argument(policy):
    p = Vec(np.array([0.5, 1.5, -1.0]))
    assert_grad_close(adgen.grad(given_object, argnums=1, mutation=policy)(p, X),
                      numerical_grad(given_object, (p, X), 1))
    grad_p = adgen.grad(given_object, argnums=0, mutation=policy)(p, X)
    # (2a + v)^2 summed, plus a.a: 4 (2a + v) + 2a
    assert_grad_close(grad_p.a, 4 * (2 * p.a + X) + 2 * p.a)


class Model:
    """A model whose methods combine models with operators (an average of two)."""

    def __init__(self, w):
        self.w = w

    def __add__(self, other):
        return Model(self.w + other.w)

    def __mul__(self, k):
        return Model(self.w * k)

    def loss(self, v):
        m = self + self * 0.5
        return np.sum(m.w * v ** 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_operators_on_self(policy):
    model = Model(np.array([1.0, 2.0, 3.0]))
    assert_grad_close(adgen.grad(model.loss, mutation=policy)(X), 3.0 * model.w * X)
    grad_model = adgen.grad(lambda m: m.loss(X), mutation=policy)(model)
    assert_grad_close(grad_model.w, 1.5 * X ** 2)


def item_of_a_product(p, v):
    return (p * v)[0]


@pytest.mark.parametrize("policy", POLICIES)
def test_an_object_parameter_read_only_through_operators_is_refused_at_its_line(policy):
    # nothing in the function tells p is a Vec: the pullback met its adjoint where an array's
    # was expected (a KeyError before); annotated, it is followed
    p = Vec(np.array([0.5, 1.5, -1.0]))
    with pytest.raises(UnsupportedError, match=r"test_operators_of_user_classes\.py:\d+.*"
                                               r"object of one of your classes was read as"):
        adgen.grad(item_of_a_product, argnums=1, mutation=policy)(p, X)

    def annotated(p: Vec, v):
        return (p * v)[0]

    assert_grad_close(adgen.grad(annotated, argnums=1, mutation=policy)(p, X),
                      np.array([0.5, 0.0, 0.0]))


class Items:
    """An object looped over (__iter__)."""

    def __init__(self, a):
        self.a = a

    def __iter__(self):
        return iter(self.a)


def loop_over_an_object(v):
    return sum(x * 2.0 for x in Items(v))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_loop_over_an_object_is_refused_naming_the_class(policy):
    # the pullback gave Items.__init__ a list for the object's adjoint: a TypeError before
    with pytest.raises(UnsupportedError, match=r"test_operators_of_user_classes\.py:\d+.*"
                                               r"object of class Items was read as"):
        adgen.grad(loop_over_an_object, mutation=policy)(X)
    # looping over its array is followed
    assert_grad_close(adgen.grad(lambda v: sum(x * 2.0 for x in Items(v).a),
                                 mutation=policy)(X), 2.0 * np.ones(3))


class Particle:
    """A state holding Vecs: its operators read attributes."""

    def __init__(self, pos, vel):
        self.pos = pos
        self.vel = vel

    def step(self, dt):
        return Particle(self.pos + self.vel * dt, self.vel)

    def energy(self):
        return self.pos.norm2() + 0.5 * self.vel.norm2()


def stepped_energy(v):
    return Particle(Vec(v), Vec(np.sin(v))).step(0.1).energy()


def sum_of_attributes(v):
    p = Particle(Vec(v), Vec(np.sin(v)))
    return (p.pos + p.vel).norm2()


def sum_of_items(v):
    vs = [Vec(v), Vec(2 * v)]
    return (vs[0] + vs[1]).norm2()


def sum_of_annotated_names(v):
    p = Particle(Vec(v), Vec(np.sin(v)))
    pos: Vec = p.pos
    vel: Vec = p.vel
    return (pos + vel * 0.1).norm2()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [stepped_energy, sum_of_attributes, sum_of_items])
def test_operators_on_attributes_and_items_are_refused_at_the_line(f, policy):
    # self.pos + self.vel * dt, p.pos + p.vel, vs[0] + vs[1]: nothing tells the operands are
    # Vecs; the gradient was 0 (a crash for step) with no error
    with pytest.raises(adgen.AdgenError, match=r"test_operators_of_user_classes\.py:\d+.*"
                                               r"an operator .* on objects of one of your"):
        adgen.grad(f, mutation=policy)(X)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_name_annotated_with_the_class(policy):
    assert_grad_close(adgen.grad(sum_of_annotated_names, mutation=policy)(X),
                      numerical_grad(sum_of_annotated_names, (X,), 0))


def scaled_norm(p, v):
    return (p * v).norm2()


def test_a_class_defined_after_the_first_gradient():
    # scaled_norm was compiled for Vec; Tripled, defined afterwards, is an object argument of
    # the same kind: the compiled code checks the class's method as it runs (it kept to the
    # classes seen when it compiled, and refused Tripled)
    assert_grad_close(adgen.grad(scaled_norm, argnums=1)(Vec(X.copy()), X), 2 * X ** 3)

    class Tripled:
        def __init__(self, a):
            self.a = a

        def __mul__(self, k):
            return Tripled(3.0 * self.a * k)

        def norm2(self):
            return np.sum(self.a ** 2)

    for policy in POLICIES:
        got = adgen.grad(scaled_norm, argnums=1, mutation=policy)(Tripled(X.copy()), X)
        assert_grad_close(got, 18 * X ** 3)


class Accumulator:
    """An in-place add of its own (__iadd__ changes the object and returns it)."""

    def __init__(self, a):
        self.a = a

    def __iadd__(self, other):
        self.a = self.a + other.a
        return self

    def norm2(self):
        return np.sum(self.a ** 2)


def accumulated(v):
    total = Accumulator(v)
    for _ in range(2):
        total += Accumulator(np.sin(v))
    return total.norm2()


def added_in_place(v):
    p = Vec(v)
    p += Vec(v ** 2)  # no __iadd__: p = p + Vec(v ** 2), Vec.__add__
    p *= 3.0
    return p.norm2()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [accumulated, added_in_place])
def test_augmented_assignment_of_an_object(f, policy):
    # refused before ('an object of class Accumulator that may share an array ...' for the
    # first, the in-place rules of an array for the second)
    assert_grad_close(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0))
