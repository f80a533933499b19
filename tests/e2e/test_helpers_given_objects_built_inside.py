"""A helper given an object the differentiated function builds, whose method writes the
object's array in place (``acc = Acc(3); total(acc, x)`` with ``Acc.add`` doing ``self.buf
+= v``), is differentiated (since session 29): it was refused ("Acc.add updates self.buf (a
ndarray) in place and is called through a variable, a method or a ..."), though the same
helper given a parameter annotated with the class was followed. bound_callees.typed_call
now compiles the helper for the class of an object the function builds, as for a typed
parameter, and checks before the call that the object holds no method of its own under the
class's names (an ``__init__`` choosing one: refused at the line, never run as the class's).
Gradients against central differences under both policies, jvp, hessian."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.5, 1.2, -0.7])
V = np.array([0.3, -1.0, 2.0])


class Acc:
    def __init__(self, n):
        self.buf = np.zeros(n)

    def add(self, v):
        self.buf += v


def accumulate(a, x):
    a.add(x * x)
    a.add(np.sin(x))
    return np.sum(a.buf ** 2)


def built_then_given(x):
    a = Acc(3)
    return accumulate(a, x)


class Oscillator:
    def __init__(self, q, dt):
        self.q = q.copy()
        self.p = np.zeros_like(q)
        self.dt = dt

    def step(self):
        self.p -= self.dt * np.sin(self.q)
        self.q += self.dt * self.p


def run(sim, n):
    for _ in range(n):
        sim.step()
    return sim.q


def simulated(x):
    sim = Oscillator(x, 0.1)
    q = run(sim, 4)
    return np.sum(q ** 2) + np.sum(sim.p)


CASES = [built_then_given, simulated]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    check_jvp(f, (X.copy(),), (V,))


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_by_hand():
    # (x^2 + sin x)^2 summed: 2 (x^2 + sin x)(2x + cos x)
    s = X ** 2 + np.sin(X)
    np.testing.assert_allclose(adgen.grad(built_then_given)(X.copy()),
                               2 * s * (2 * X + np.cos(X)), rtol=1e-12)


class Chooser(Acc):
    def __init__(self, n, scale):
        super().__init__(n)
        if scale != 1.0:
            self.add = self.add_scaled  # a method of its own, chosen at construction

    def add_scaled(self, v):
        self.buf += 2.0 * v


def chosen(x):
    a = Chooser(3, 2.0)
    return accumulate(a, x)  # MARK chosen


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_object_holding_a_method_of_its_own_is_refused_at_the_call(mutation):
    with pytest.raises(adgen.UnsupportedError, match="add") as info:
        adgen.grad(chosen, mutation=mutation)(X.copy())
    assert (info.value.location.file, info.value.location.line) == (__file__, _line("MARK chosen"))
