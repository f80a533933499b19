"""A whole array read by a pullback and then written in place by a statement right after it
in the same block (``z -= z.max(axis=1, keepdims=True)``; ``np.exp(z, out=z)``): under
"save" it is copied where it is read and the writes carry no guard, since a guard would copy
all of it there anyway. A write of a part of the array keeps its guard (``where=`` on a
ufunc, which would leave elements alone, is refused before this matters). Gradients against central differences of the plain function,
under both policies, with the arguments' final state."""

import numpy as np
import pytest
from harness import adgen_grad, check_gradient, check_value, fresh, line_of

import adgen
from adgen.errors import MutationError


def shifted_exp(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)  # max's pullback reads the z this overwrites
    np.exp(z, out=z)
    return -np.sum(Y * np.log1p(z)) / X.shape[0]


def softmax_xent(W, X, Y):
    """The stable softmax: its max shift has no derivative (analyses.shift_invariance), so
    no pullback reads the z the shift overwrites."""
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def squared_then_exp_in_place(x):
    z = x * 1.5
    y = z * z  # the pullback of z * z reads z ...
    np.exp(z, out=z)  # ... which this overwrites, every element
    return np.sum(y) + np.sum(z)


def through_another_name(x):
    z = np.sin(x)
    s = np.sum(z ** 3)  # reads z
    w = z
    w *= 2.0  # writes z through another name
    return s + np.sum(w * x)


def in_place_argument(x):
    s = np.sum(np.tanh(x))  # reads the argument
    x *= 3.0  # the caller sees x tripled
    return s + np.sum(x ** 2)


def partly_written(x):
    z = x * 1.0
    y = z * z
    z[1:] = np.exp(z[1:])  # z[0] keeps its value
    return np.sum(y) + np.sum(z)


def in_a_loop(x):
    z = x.copy()
    s = 0.0
    for _ in range(3):
        s = s + np.sum(np.cos(z))  # reads z each step ...
        z -= z.max()  # ... then overwrites it
    return s + np.sum(z ** 2)


class Scaler:
    def __init__(self, k):
        self.k = k

    def loss(self, x):
        z = x * self.k
        y = np.log1p(z * z)
        np.tanh(z, out=z)
        return np.sum(y * z)


CASES = [
    (shifted_exp, lambda rng: (0.3 * rng.standard_normal((5, 4)),
                               rng.standard_normal((6, 5)),
                               np.eye(4)[rng.integers(0, 4, 6)]), (0, 1)),
    (squared_then_exp_in_place, lambda rng: (0.5 * rng.standard_normal(7),), (0,)),
    (through_another_name, lambda rng: (rng.standard_normal(6),), (0,)),
    (in_a_loop, lambda rng: (rng.standard_normal(5),), (0,)),
]


@pytest.mark.parametrize("f, make, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_copied_where_read_and_no_guard(f, make, argnums):
    args = make(np.random.default_rng(3))
    check_gradient(f, args, argnums, adgen_grad("save"))
    check_value(f, args, argnums, "save")
    src = adgen.source(f, *args).split("_pullback")[0]
    assert "copy_when_read(" in src and "before_write(" not in src, src


@pytest.mark.parametrize("f, make, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_strict_refuses(f, make, argnums):
    args = make(np.random.default_rng(4))
    with pytest.raises(MutationError):
        adgen.grad(f, argnums=argnums, mutation="strict")(*fresh(args))


def test_the_site_says_it_is_copied_where_read():
    rng = np.random.default_rng(5)
    args = (0.3 * rng.standard_normal((5, 4)), rng.standard_normal((6, 5)),
            np.eye(4)[rng.integers(0, 4, 6)])
    sites = adgen.explain(shifted_exp, *fresh(args), file=None)
    at = line_of(shifted_exp, "z -= z.max(axis=1, keepdims=True)")
    mine = [s for s in sites if s.line == at]
    assert mine and all("copied where it is read" in s.reason and s.bytes_saved == 6 * 4 * 8
                        for s in mine), sites


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_the_stable_softmax_keeps_nothing(policy):
    """Nothing reads the logits before the shift: no copy, no guard, and strict accepts it."""
    rng = np.random.default_rng(5)
    args = (0.3 * rng.standard_normal((5, 4)), rng.standard_normal((6, 5)),
            np.eye(4)[rng.integers(0, 4, 6)])
    check_gradient(softmax_xent, args, (0, 1), adgen_grad(policy))
    check_value(softmax_xent, args, (0, 1), policy)
    src = adgen.source(softmax_xent, *args, mutation=policy)
    assert "copy_when_read(" not in src and "before_write(" not in src and \
        "max_vjp" not in src, src
    sites = adgen.explain(softmax_xent, *fresh(args), mutation=policy, file=None)
    assert all(s.bytes_saved in (None, 0) for s in sites), sites


def test_an_argument_written_in_place_keeps_its_final_state():
    args = (np.random.default_rng(6).standard_normal(5),)
    check_gradient(in_place_argument, args, (0,), adgen_grad("save"))
    check_value(in_place_argument, args, (0,), "save")


def test_a_write_of_a_part_keeps_its_guard():
    args = (np.random.default_rng(7).standard_normal(8),)
    check_gradient(partly_written, args, (0,), adgen_grad("save"))
    src = adgen.source(partly_written, *args)
    assert "copy_when_read(" not in src and "before_write(" in src


def test_a_method_and_a_lambda():
    x = np.random.default_rng(8).standard_normal(6) * 0.5
    s = Scaler(1.3)
    check_gradient(s.loss, (x,), (0,), adgen_grad("save"))

    def outer(x):
        f = lambda v: np.sum(np.sqrt(v * v + 1.0))  # noqa: E731
        z = x * 2.0
        a = f(z)
        z += 1.0
        b = np.sum(z * z)
        return a + b

    check_gradient(outer, (x,), (0,), adgen_grad("save"))
