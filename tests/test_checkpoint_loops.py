"""adgen.grad(f, checkpoint=K): a long top-level loop run as checkpointed segments.

The functions are written as users write them (a loop that updates a buffer in place, an RNN
that appends its states to a list, a method reading self, a closure, a global read live).
Every gradient is checked against central differences and against the gradient without
checkpointing; refusals must name this file and the line of the construct.
"""

from __future__ import annotations

import pickle
import tracemalloc

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]
SIZES = [1, 3, 7, 1000, True]


def heat(u0, alpha):
    u = u0.copy()
    for t in range(40):
        u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) + 0.01 * np.sin(u[1:-1])
    return np.sum(u ** 2)


def strided(u0, w):
    u = u0.copy()
    total = 0.0
    for k in range(30, 2, -3):            # a negative step; k is read after the loop
        u = np.tanh(w * u + 0.1 * k)
        total = total + np.sum(u) * k
    return total + k * np.sum(u ** 2)


def rnn(xs, W, h0):
    h = h0.copy()
    states = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        states.append(h)
    return np.sum(h) + 0.1 * sum(np.sum(s ** 2) for s in states)


def relax(u, r):            # a helper that writes its argument in place
    u[1:-1] += r * (u[2:] - 2.0 * u[1:-1] + u[:-2])


def two_loops(u0, r):
    u = u0.copy()
    for i in range(12):
        relax(u, r)
    acc = 0.0
    for j in range(5):
        acc = acc + np.sum(np.cos(u) * j)
    return acc + np.sum(u ** 2)


def carried_previous(x):
    y = x.copy()
    prev = None                           # kept from one iteration to the next
    for t in range(10):
        if prev is not None:
            y = y + 0.1 * prev
        prev = np.sin(y)
    return np.sum(y ** 2)


CASES = [
    (heat, lambda rng: (rng.normal(size=12), 0.2), (0, 1)),
    (strided, lambda rng: (rng.normal(size=5), 0.7), (0, 1)),
    (rnn, lambda rng: (rng.normal(size=(17, 4)), 0.4 * rng.normal(size=(4, 4)),
                       rng.normal(size=4)), (0, 1, 2)),
    (two_loops, lambda rng: (rng.normal(size=9), 0.2), (0, 1)),
    (carried_previous, lambda rng: (rng.normal(size=4),), 0),
]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("every", SIZES)
@pytest.mark.parametrize("fn,make,argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_segments_match_finite_differences(fn, make, argnums, every, mutation):
    args = make(np.random.default_rng(0))
    before = [np.copy(a) for a in args]
    try:
        plain = adgen.grad(fn, argnums, mutation=mutation)(*args)
    except adgen.MutationError as exc:  # strict: the segments refuse the same write
        with pytest.raises(adgen.MutationError) as info:
            adgen.grad(fn, argnums, checkpoint=every, mutation=mutation)(*args)
        assert info.value.location == exc.location
        return
    got = adgen.grad(fn, argnums, checkpoint=every, mutation=mutation)(*args)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    expected = tuple(numerical_grad(fn, args, k) for k in nums)
    assert_grad_close(got if isinstance(argnums, tuple) else (got,), expected)
    assert_grad_close(got, plain, rtol=1e-10, atol=1e-12)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)   # the arguments are left as they were


def test_value_and_grad_with_aux_and_pickle():
    def loss(w, data):
        h = np.zeros(3)
        for t in range(len(data)):
            h = np.tanh(w * h + data[t])
        return np.sum(h ** 2), h

    data = np.random.default_rng(1).normal(size=(20, 3))
    (value, aux), g = adgen.value_and_grad(loss, has_aux=True, checkpoint=4)(0.5, data)
    assert value == pytest.approx(loss(0.5, data)[0])
    np.testing.assert_allclose(aux, loss(0.5, data)[1])
    assert g == pytest.approx(numerical_grad(lambda w: loss(w, data)[0], [0.5], 0), rel=1e-6)
    again = pickle.loads(pickle.dumps(adgen.grad(heat, checkpoint=5)))
    u0 = np.linspace(0.0, 1.0, 8)
    assert_grad_close(again(u0, 0.1), numerical_grad(heat, (u0, 0.1), 0))


class Diffusion:
    """A method whose loop reads attributes of self and a private attribute."""

    def __init__(self, rate):
        self.rate = rate
        self.__decay = 0.05

    def energy(self, u0):
        u = u0.copy()
        for step in range(25):
            u[1:-1] += self.rate * (u[2:] - 2.0 * u[1:-1] + u[:-2]) - self.__decay * u[1:-1]
        return np.sum(u ** 2)


def test_method_closure_and_live_global():
    model = Diffusion(0.2)
    u0 = np.random.default_rng(2).normal(size=10)
    assert_grad_close(adgen.grad(model.energy, checkpoint=6)(u0),
                      numerical_grad(model.energy, (u0,), 0))

    def make(scale):
        def f(x):
            y = x.copy()
            for t in range(9):
                y = np.sin(scale * y) + y
            return np.sum(y)
        return f

    f = make(0.5)
    assert_grad_close(adgen.grad(f, checkpoint=2)(u0), numerical_grad(f, (u0,), 0))

    g = adgen.grad(uses_global, checkpoint=3)
    first = g(u0)
    global GAIN
    try:
        GAIN = 2.0                         # read live: the gradient follows the new value
        assert_grad_close(g(u0), numerical_grad(uses_global, (u0,), 0))
        assert not np.allclose(g(u0), first)
    finally:
        GAIN = 1.0


GAIN = 1.0


def uses_global(x):
    y = x.copy()
    for t in range(8):
        y = y + GAIN * 0.1 * np.sin(y)
    return np.sum(y ** 2)


def aliased_view(x):
    u = x.copy()
    inner = u[1:]
    for t in range(6):
        u[0] += 0.1 * np.sum(u)
    return np.sum(inner)


def writes_argument(u):
    for t in range(6):
        u[1:] = 0.9 * u[1:] + 0.1 * u[:-1]
    return np.sum(u ** 2)


def breaks(x):
    y = x.copy()
    for t in range(6):
        if np.sum(y) > 10:
            break
        y = y * 1.5
    return np.sum(y)


def carried_unbound(x):
    y = x.copy()
    for t in range(6):
        if t > 0:
            y = y + prev  # noqa: F821 (bound in the previous iteration)
        prev = np.sin(y)  # noqa: F841
    return np.sum(y)


def no_loop(x):
    return np.sum(np.sin(x))


REFUSALS = [
    (aliased_view, "inner shares memory with it", "for t in range(6):"),
    (writes_argument, "writes the argument u of writes_argument", "for t in range(6):"),
    (breaks, "a break statement", "break"),
    (carried_unbound, "prev is kept from one iteration to the next", "for t in range(6):"),
    (no_loop, "no for loop over range", "def no_loop(x):"),
]


@pytest.mark.parametrize("fn,message,line", REFUSALS, ids=[r[0].__name__ for r in REFUSALS])
def test_refusals_name_the_users_line(fn, message, line):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(fn, checkpoint=2)(np.linspace(0.1, 0.9, 5))
    text = str(info.value)
    assert message in text
    assert info.value.location.file == __file__
    assert info.value.location.source_line.strip() == line


def strict_overwrite(x):
    u = x.copy()
    for t in range(6):
        v = np.sin(u)
        u[:] = 0.5 * u                     # overwrites what sin's gradient reads
        u = u + v
    return np.sum(u ** 2)


def test_strict_errors_name_the_users_file():
    x = np.linspace(0.1, 0.9, 5)
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(strict_overwrite, checkpoint=2, mutation="strict")(x)
    assert info.value.location.file == __file__
    assert "u[:] = 0.5 * u" in info.value.location.source_line
    assert_grad_close(adgen.grad(strict_overwrite, checkpoint=2)(x),
                      numerical_grad(strict_overwrite, (x,), 0))


def long_heat(u0, alpha):
    u = u0.copy()
    for t in range(2000):
        u[1:-1] += alpha * np.sin(u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def _peak(fn, *args):
    fn(*args)
    tracemalloc.start()
    try:
        out = fn(*args)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_segments_keep_less_memory():
    u0 = np.sin(np.linspace(0.0, 3.0, 200))
    plain, plain_peak = _peak(adgen.grad(long_heat), u0, 0.1)
    ck, ck_peak = _peak(adgen.grad(long_heat, checkpoint=True), u0, 0.1)
    np.testing.assert_allclose(ck, plain, rtol=1e-12)
    assert ck_peak * 5 < plain_peak, (ck_peak, plain_peak)


def test_bad_sizes_and_backend():
    with pytest.raises(ValueError, match="positive int"):
        adgen.grad(heat, checkpoint=0)
    with pytest.raises(adgen.UnsupportedError, match="default backend"):
        adgen.grad(heat, checkpoint=3, backend="numba")


class Cell:
    """Parameters read in the loop and after it; a method that changes self in the loop."""

    def __init__(self):
        self.rate = 0.2
        self.w = np.array([0.5, -0.3, 0.1])

    def loss(self, u0):
        u = u0.copy()
        for t in range(9):
            u = np.tanh(self.w * u + self.rate)
        return np.sum(u ** 2) * self.rate

    def decays(self, u0):
        u = u0.copy()
        for t in range(4):
            self.w = self.w * 0.9
            u = u * self.w
        return np.sum(u)


def test_gradient_of_the_object_read_in_the_loop():
    cell = Cell()
    u0 = np.array([0.3, 0.2, -0.5])
    g = adgen.grad(Cell.loss, argnums=0, checkpoint=2)(cell, u0)
    expected = numerical_grad(Cell.loss, (cell, u0), 0)
    assert g.rate == pytest.approx(expected.rate, rel=1e-6)
    np.testing.assert_allclose(g.w, expected.w, rtol=1e-6, atol=1e-9)
    with pytest.raises(adgen.UnsupportedError, match="change the object self") as info:
        adgen.grad(cell.decays, checkpoint=2)(u0)
    assert info.value.location.source_line.strip() == "for t in range(4):"


def test_one_rewrite_per_function():
    from adgen.rules import registry

    u0 = np.linspace(0.0, 1.0, 6)
    adgen.grad(heat, checkpoint=4)(u0, 0.1)
    generation = registry.generation()
    for _ in range(3):                      # built again in a loop, as people do
        adgen.grad(heat, checkpoint=4)(u0, 0.1)
    assert registry.generation() == generation


def nudge(u, v):
    u[1:] += 0.1 * np.sin(v[:-1])


def calls_nudge(x):
    u = x.copy()
    v = x * 2.0
    for t in range(6):
        nudge(u, v)
    return np.sum(u ** 2) + np.sum(v ** 2)


def test_a_helper_rebound_to_write_another_argument():
    global nudge
    x = np.linspace(0.1, 0.9, 5)
    g = adgen.grad(calls_nudge, checkpoint=2)
    assert_grad_close(g(x), numerical_grad(calls_nudge, (x,), 0))
    original = nudge

    def nudge(u, v):                        # now writes v too: never a stale split
        u[1:] += 0.1 * np.sin(v[:-1])
        v[:-1] += 0.05 * u[1:]

    try:
        with pytest.raises(adgen.UnsupportedError, match="now writes v in place"):
            g(x)
        again = adgen.grad(calls_nudge, checkpoint=2)
        assert_grad_close(again(x), numerical_grad(calls_nudge, (x,), 0))
    finally:
        nudge = original


def closure_over_state(x):
    u = x.copy()

    def pressure():
        return np.sum(u ** 2)

    for t in range(6):
        u = u * 0.9 + 0.01 * pressure()
    return np.sum(u)


def closure_over_constants(x):
    scale = 0.5

    def damp(v):                       # reads only what the loop leaves alone
        return scale * v

    u = x.copy()
    for t in range(6):
        u = u + damp(np.sin(u))
    return np.sum(u ** 2)


def test_closures_over_what_the_loop_changes():
    x = np.linspace(0.1, 0.9, 5)
    with pytest.raises(adgen.UnsupportedError, match="reads u from the function") as info:
        adgen.grad(closure_over_state, checkpoint=2)(x)
    assert info.value.location.source_line.strip() == "def pressure():"
    assert_grad_close(adgen.grad(closure_over_constants, checkpoint=2)(x),
                      numerical_grad(closure_over_constants, (x,), 0))
