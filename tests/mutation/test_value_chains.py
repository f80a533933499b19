"""An array the function allocates and then writes in place as a whole, under names nothing
else sees (``z = X @ W; z -= z.max(axis=1, keepdims=True); np.exp(z, out=z)``), keeps its
adjoints as values (reverse_plan.Plan.value_chains): each write has the pullback of the
operation it performs, without shadow memory. Next to each case, a look-alike that must keep
shadow memory (an alias read after the write, a view, a write in a loop or a branch, an
argument, a callee); every gradient against central differences, under both policies where
the code allows strict, with the arguments' final state."""

import numpy as np
import pytest
from harness import adgen_grad, check_gradient, check_value

import adgen
from adgen.errors import MutationError


def softmax_xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def doubled_by_itself(x):
    z = np.sin(x)
    z += z  # reads the old value while writing
    np.multiply(z, x, out=z)
    return np.sum(z ** 2)


def into_a_fresh_buffer(x):
    o = np.empty_like(x)
    np.tanh(x, out=o)  # the old contents (garbage) get no gradient
    o *= 3.0
    return np.sum(o * x)


def alias_read_after(x):
    z = x * 2.0
    y = z  # another name of the buffer ...
    z *= 3.0
    return np.sum(y * x)  # ... read after the write: it holds 6x


def view_taken(x):
    z = np.cos(x)
    v = z[1:]
    z *= 2.0
    return np.sum(v * x[1:]) + np.sum(z)


def written_in_a_loop(x):
    z = x * 1.0
    for _ in range(3):
        z *= np.tanh(z)
    return np.sum(z)


def written_in_a_branch(x, flag):
    z = np.exp(x)
    if flag > 0.0:
        z -= np.mean(z)
    return np.sum(z ** 2)


def scale(v):
    v *= 2.0


def written_by_a_callee(x):
    z = x * x
    scale(z)
    z += 1.0
    return np.sum(np.log(z))


def argument_in_place(x):
    x -= np.max(x)
    np.exp(x, out=x)
    return np.sum(x)


def _softmax_args(rng):
    return (0.3 * rng.standard_normal((5, 4)), rng.standard_normal((6, 5)),
            np.eye(4)[rng.integers(0, 4, 6)])


VALUES = [
    (softmax_xent, _softmax_args, (0, 1)),
    (doubled_by_itself, lambda rng: (rng.standard_normal(6),), (0,)),
    (into_a_fresh_buffer, lambda rng: (rng.standard_normal(6),), (0,)),
]

SHADOWED = [
    (alias_read_after, lambda rng: (rng.standard_normal(5),), (0,)),
    (view_taken, lambda rng: (rng.standard_normal(5),), (0,)),
    (written_in_a_loop, lambda rng: (0.5 * rng.standard_normal(5),), (0,)),
    (written_in_a_branch, lambda rng: (0.5 * rng.standard_normal(5), 1.0), (0,)),
    (written_by_a_callee, lambda rng: (rng.standard_normal(5) + 2.0,), (0,)),
    (argument_in_place, lambda rng: (rng.standard_normal(5),), (0,)),
]


@pytest.mark.parametrize("f, make, argnums", VALUES, ids=[c[0].__name__ for c in VALUES])
def test_adjoints_as_values(f, make, argnums):
    args = make(np.random.default_rng(1))
    check_gradient(f, args, argnums, adgen_grad("save"))
    check_value(f, args, argnums, "save")
    pullback = adgen.source(f, *args).split("_pullback(")[1]
    assert "sh.of(" not in pullback and "ShadowMap()" not in pullback, pullback


@pytest.mark.parametrize("f, make, argnums", VALUES, ids=[c[0].__name__ for c in VALUES])
def test_adjoints_as_values_strict(f, make, argnums):
    args = make(np.random.default_rng(2))
    try:
        check_gradient(f, args, argnums, adgen_grad("strict"))
    except MutationError as exc:
        # each overwrites a value its gradient reads (max's input, multiply's input, tanh's
        # output): strict names both lines
        assert "reads" in str(exc)


@pytest.mark.parametrize("f, make, argnums", SHADOWED, ids=[c[0].__name__ for c in SHADOWED])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_look_alikes_keep_shadow_memory(f, make, argnums, mutation):
    args = make(np.random.default_rng(3))
    try:
        check_gradient(f, args, argnums, adgen_grad(mutation))
    except MutationError:
        assert mutation == "strict"
        return
    check_value(f, args, argnums, mutation)
    assert "sh.of(" in adgen.source(f, *args, mutation=mutation).split("_pullback(")[1]


def test_a_vjp_pullback_runs_twice_and_a_method():
    rng = np.random.default_rng(4)
    args = _softmax_args(rng)
    out, pullback = adgen.vjp(softmax_xent, *args)
    first = pullback(1.0)
    second = pullback(1.0)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)

    class Head:
        def __init__(self, W):
            self.W = W

        def loss(self, X):
            s = X @ self.W
            s -= s.max(axis=1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=1, keepdims=True)
            return np.sum(s[:, 0])

    h = Head(args[0])
    check_gradient(h.loss, (args[1],), (0,), adgen_grad("save"))
