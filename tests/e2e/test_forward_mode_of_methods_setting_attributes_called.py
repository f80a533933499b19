"""jvp and jacfwd of a function that CALLS a method setting an attribute of its object and
reading another one, a constant (``self.h = np.sqrt(self.data) * w ** 3``; ``f(w, m) =
m.keeps(w)``, a model held by another object, a method calling that method). The call handed
the method the object's zero tangent, so ``self.data`` took a zero tangent and the square
root's was ``0 / (2 * 0)``: NaN where ``data`` holds a 0 (jvp of the bound method itself was
right since b9be3a8). Checked against the hand formula and central differences, with what the
caller reads of the object after the call."""

import numpy as np
import pytest

import adgen

DATA = np.array([0.0, 1.0, 4.0])
X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


class Model:
    def __init__(self, data):
        self.data = data

    def keeps(self, w):
        self.h = np.sqrt(self.data) * w ** 3
        return np.sum(self.h)

    def outer(self, w):
        return self.keeps(w) + 1.0


class Holder:
    def __init__(self):
        self.m = Model(DATA)

    def loss(self, w):
        return self.m.keeps(w)


def calls(w, m):
    return m.keeps(w)


def calls_then_reads(w, m):
    m.keeps(w)
    return np.sum(m.h * w)


def grad_keeps(w):
    return 3 * np.sqrt(DATA) * w ** 2


def grad_then_reads(w):
    return 4 * np.sqrt(DATA) * w ** 3


MODEL = Model(DATA)
HOLDER = Holder()

CASES = {
    "module_function": (lambda w: calls(w, Model(DATA)), grad_keeps),
    "module_function_global_model": (lambda w: calls(w, MODEL), grad_keeps),
    "held_by_an_object": (lambda w: HOLDER.loss(w), grad_keeps),
    "method_calling_the_method": (lambda w: MODEL.outer(w), grad_keeps),
    "caller_reads_the_attribute": (lambda w: calls_then_reads(w, Model(DATA)), grad_then_reads),
}


def central(fn, x, v, eps=1e-6):
    return (fn(x + eps * v) - fn(x - eps * v)) / (2 * eps)


@pytest.mark.parametrize("name", list(CASES))
def test_jvp_and_jacfwd(name):
    fn, grad = CASES[name]
    with np.errstate(all="raise"):
        value, tangent = adgen.jvp(fn, (X,), (V,))
        jac = adgen.jacfwd(fn)(X)
    assert np.isclose(value, fn(X))
    assert np.isclose(tangent, grad(X) @ V)
    assert np.isclose(tangent, central(fn, X, V), rtol=1e-6)
    assert np.allclose(jac, grad(X))
    assert np.allclose(adgen.grad(fn)(X), grad(X))


def test_the_object_keeps_what_the_call_stores():
    m = Model(DATA)
    adgen.jvp(lambda w: calls(w, m), (X,), (V,))
    assert np.allclose(m.h, np.sqrt(DATA) * X ** 3)


class Stepper:
    def __init__(self, data):
        self.data = data
        self.h = np.ones(3)

    def step(self, w):
        # reads self.h, which a call before set (with a tangent), before storing it again
        out = np.sum(np.sqrt(self.data) * self.h * w)
        self.h = w ** 2
        return out

    def reset(self, w):
        out = np.sum(self.h * w)
        self.h = np.zeros(3)  # a store of a constant: the object is not varied by it
        return out


def twice(w, m):
    return m.keeps(w) + m.keeps(2 * w)


def steps(w, s):
    return s.step(w) + s.step(2 * w) + s.reset(w) + s.step(w)


SECOND_CALLS = {
    "the_method_twice": (lambda w: twice(w, Model(DATA)),
                         lambda w: 3 * np.sqrt(DATA) * w ** 2 * 9),
    "steps_reading_what_the_last_set": (
        lambda w: steps(w, Stepper(DATA)),
        # sqrt(d) w + sqrt(d) w^2 (2w) + (2w)^2 w + 0
        lambda w: np.sqrt(DATA) + 6 * np.sqrt(DATA) * w ** 2 + 12 * w ** 2),
}


@pytest.mark.parametrize("name", list(SECOND_CALLS))
def test_a_second_call_on_the_same_object(name):
    fn, grad = SECOND_CALLS[name]
    value, tangent = adgen.jvp(fn, (X,), (V,))
    assert np.isclose(value, fn(X))
    assert np.isclose(tangent, grad(X) @ V)
    assert np.isclose(tangent, central(fn, X, V), rtol=1e-6)
    assert np.allclose(adgen.jacfwd(fn)(X), grad(X))
    assert np.allclose(adgen.grad(fn)(X), grad(X))
