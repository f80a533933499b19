"""A stepper's method that writes its array argument in place and also counts its calls
(``self.steps += 1``, ``self.t += dt``) or sums into an array of its object (``self.acc += u``).

Each alone was followed: a method writing ``u`` in place called on a model given as an
argument or on a global model (transforms/bound_callees.py), and a method whose only writes
are counters (analyses.number_updates). Together they were refused when the gradient ran
("Stepper.step updates self.steps in place ..., where adgen cannot tell that it holds a
number"): the counter made ``front.writes_parameters`` answer False, so the call was left to
the run-time dispatch, which refuses a method writing an array argument. The call is now
the call of the class's function, which adgen follows as any method writing its argument.

Gradients against central differences under both policies; the counters after ``grad`` are
those of one plain call.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


class Stepper:
    def __init__(self, k):
        self.k = k
        self.steps = 0
        self.t = 0.0

    def step(self, u):
        self.steps += 1
        self.t += 0.1
        u[1:] += self.k * u[:-1].copy()


class Accumulating(Stepper):
    def __init__(self, k, n):
        super().__init__(k)
        self.acc = np.zeros(n)

    def step(self, u):
        self.steps += 1
        self.acc += u
        u[1:] += self.k * u[:-1].copy()


def run(w, model):
    u = np.sin(w)
    for _ in range(3):
        model.step(u)
    return np.sum(u ** 2) * model.k


GLOBAL_MODEL = Stepper(0.4)


def run_global(w):
    u = np.cos(w)
    GLOBAL_MODEL.step(u)
    GLOBAL_MODEL.step(u)
    return np.sum(u ** 3)


def run_accumulating(w, model):
    u = np.sin(w)
    model.step(u)
    model.step(u)
    return np.sum(u ** 2) + np.sum(model.acc * w)


W = np.array([0.1, 0.5, -0.3, 0.8])


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_model_argument_counting_its_steps(mutation) -> None:
    g = adgen.grad(run, mutation=mutation)(W.copy(), Stepper(0.3))
    expected = numerical_grad(lambda w: run(w, Stepper(0.3)), (W.copy(),), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_model_gets_its_gradient(mutation) -> None:
    g = adgen.grad(run, argnums=1, mutation=mutation)(W.copy(), Stepper(0.3))
    k_bar = numerical_grad(lambda k: run(W.copy(), Stepper(k)), (0.3,), 0)
    assert g.k == pytest.approx(k_bar, rel=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_counters_are_those_of_one_plain_call(mutation) -> None:
    plain, model = Stepper(0.3), Stepper(0.3)
    run(W.copy(), plain)
    adgen.value_and_grad(run, mutation=mutation)(W.copy(), model)
    assert (model.steps, model.t) == (plain.steps, plain.t) == (3, pytest.approx(0.3))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_global_model_counting_its_steps(mutation) -> None:
    # (strict refused it when compiling: the second call's self.steps += 1 was taken for an
    # overwrite of GLOBAL_MODEL, which the first call's gradient reads (self.k, a number):
    # "GLOBAL_MODEL.step(u) overwrites GLOBAL_MODEL, which the gradient of line 62 reads")
    GLOBAL_MODEL.steps = 0
    g = adgen.grad(run_global, mutation=mutation)(W.copy())
    assert GLOBAL_MODEL.steps == 2
    np.testing.assert_allclose(g, numerical_grad(run_global, (W.copy(),), 0),
                               rtol=1e-6, atol=1e-8)


class Weighted:
    """A model whose step counts, and whose shrink writes its weights in place."""

    def __init__(self):
        self.w = np.array([0.3, -1.2, 0.8, 0.5])
        self.steps = 0

    def apply(self, u):
        self.steps += 1
        return np.sum(self.w * u)  # its gradient in u reads self.w

    def shrink(self):
        self.w[:] = self.w * 0.5


WEIGHTED = Weighted()


def apply_shrink_apply(w):
    WEIGHTED.w = np.array([0.3, -1.2, 0.8, 0.5])
    s = WEIGHTED.apply(w)
    WEIGHTED.shrink()  # overwrites the weights the first apply's gradient reads
    return s * WEIGHTED.apply(w)


def test_a_global_model_whose_weights_a_later_call_overwrites() -> None:
    # strict no longer refuses a call changing a global object when compiling (above): a
    # call overwriting an array of it that a gradient reads is refused when it runs
    g = adgen.grad(apply_shrink_apply)(W.copy())
    np.testing.assert_allclose(g, numerical_grad(apply_shrink_apply, (W.copy(),), 0),
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(adgen.MutationError, match=r"WEIGHTED.shrink\(\) hands WEIGHTED.w to "
                                                  r"WEIGHTED.shrink, which overwrites it"):
        adgen.grad(apply_shrink_apply, mutation="strict")(W.copy())


def test_an_array_of_the_model_summed_into_in_the_step() -> None:
    g = adgen.grad(run_accumulating)(W.copy(), Accumulating(0.3, 4))
    expected = numerical_grad(lambda w: run_accumulating(w, Accumulating(0.3, 4)),
                              (W.copy(),), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_forward_mode_and_the_hessian() -> None:
    def f(w):
        return run(w, Stepper(0.3))

    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (W.copy(),), (v,))
    assert t == pytest.approx(numerical_grad(f, (W.copy(),), 0) @ v, rel=1e-6)
    H = adgen.hessian(run)(W.copy(), Stepper(0.3))
    eps = 1e-4
    columns = [(numerical_grad(f, (W + eps * e,), 0) - numerical_grad(f, (W - eps * e,), 0))
               / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(H, np.array(columns), rtol=1e-4, atol=1e-5)
