"""An array passed to a user function whose saved values keep it, then overwritten whole by a
later statement of the same block (RK4: ``k[0] = rhs(y, W)``, then ``y += ...``): under
"save" the callee is handed a copy taken at the call, and the write has no guard and the
pullback no ``remap_saved``. Only where the copy cannot be seen: a callee that writes an
argument, returns a view of one, or gets the same array twice keeps the guard. Gradients
against central differences of the plain function, under both policies, with the
arguments' final state."""

import numpy as np
import pytest
from harness import adgen_grad, check_gradient, check_value, fresh, line_of

import adgen
from adgen.errors import MutationError


def rhs(y, W):
    return np.tanh(W @ y)


def rk4(y0, W):
    y = y0.copy()
    k = np.empty((4, y0.shape[0]))
    for _ in range(3):
        k[0] = rhs(y, W)
        k[1] = rhs(y + 0.05 * k[0], W)
        k[2] = rhs(y + 0.05 * k[1], W)
        k[3] = rhs(y + 0.1 * k[2], W)
        y += 0.1 / 6.0 * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3])
    return np.sum(y ** 2)


def scaled(y, c=1.0):
    return np.sin(y) * c


def by_keyword(x):
    y = x * 1.0
    a = scaled(c=2.0, y=y)  # the callee's saved values keep y
    y *= 3.0
    return np.sum(a * a) + np.sum(y * x)


def positional(x):
    y = x * 1.0
    a = scaled(y, 2.0)
    y *= 3.0
    return np.sum(a * a) + np.sum(y * x)


def argument_then_overwritten(x, w):
    a = rhs(x, w)  # the caller sees x halved; w may be x
    x *= 0.5
    return np.sum(a) + np.sum(x * x)


def returns_its_argument(y, W):
    return y


def through_a_view(x, W):
    y = x * 1.0
    a = returns_its_argument(y, W)  # a is y: a copy would change the primal
    b = rhs(a, W)
    y += 1.0
    return np.sum(a * b)


def writes_its_argument(y, W):
    y *= 2.0
    return np.tanh(W @ y)


def callee_writes(x, W):
    y = x * 1.0
    a = writes_its_argument(y, W)  # the caller sees y doubled
    y += a
    return np.sum(y * y)


def both(a, b):
    return np.sum(a * b) * (1.0 if a is b else 2.0)


def same_array_twice(x):
    y = x * 1.0
    s = both(y, y)  # a is b in the callee: no copy of one of them
    y -= 0.5
    return s + np.sum(y * y)


class Model:
    def __init__(self, W):
        self.W = W

    def rhs(self, y):
        return np.tanh(self.W @ y)

    def step(self, y0):
        y = y0 * 1.0
        f = lambda v: np.cos(v) * v  # noqa: E731
        for _ in range(2):
            k = self.rhs(y)
            g = f(y)
            y += 0.1 * k + 0.01 * g
        return np.sum(y ** 2)


def _rk4_args(rng):
    return rng.standard_normal(5), rng.standard_normal((5, 5)) / np.sqrt(5)


COPIED = [
    (rk4, _rk4_args, (0, 1)),
    (by_keyword, lambda rng: (rng.standard_normal(6),), (0,)),
    (positional, lambda rng: (rng.standard_normal(6),), (0,)),
]
GUARDED = [
    # two parameters may be one array (the caller's f(z, z)): x's memory may be w's
    (argument_then_overwritten, lambda rng: (rng.standard_normal(4),
                                             rng.standard_normal((4, 4))), (0, 1)),
    (through_a_view, _rk4_args, (0, 1)),
    (callee_writes, _rk4_args, (0, 1)),
    (same_array_twice, lambda rng: (rng.standard_normal(5),), (0,)),
]


@pytest.mark.parametrize("f, make, argnums", COPIED, ids=[c[0].__name__ for c in COPIED])
def test_a_copy_is_passed_and_the_write_has_no_guard(f, make, argnums):
    args = make(np.random.default_rng(1))
    check_gradient(f, args, argnums, adgen_grad("save"))
    check_value(f, args, argnums, "save")
    src = adgen.source(f, *fresh(args))
    mine = src.split(f"def {f.__name__}_forward")[1]
    assert "copy_when_read(y" in mine, src
    if f is not by_keyword:
        # (with a keyword, the kinds analysis does not know the callee's result is an array
        # it made, so the result keeps a capture that y's write checks)
        assert "before_write(" not in mine and "remap_saved(" not in mine and \
            "capture(" not in mine, src


@pytest.mark.parametrize("f, make, argnums", COPIED, ids=[c[0].__name__ for c in COPIED])
def test_strict_still_refuses(f, make, argnums):
    args = make(np.random.default_rng(2))
    with pytest.raises(MutationError):
        adgen.grad(f, argnums=argnums, mutation="strict")(*fresh(args))


@pytest.mark.parametrize("f, make, argnums", GUARDED, ids=[c[0].__name__ for c in GUARDED])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_look_alikes_keep_their_guard(f, make, argnums, mutation):
    args = make(np.random.default_rng(3))
    if mutation == "strict":
        try:
            adgen.grad(f, argnums=argnums, mutation="strict")(*fresh(args))
        except MutationError:
            return
    check_gradient(f, args, argnums, adgen_grad(mutation))
    check_value(f, args, argnums, mutation)
    if mutation == "save":
        mine = adgen.source(f, *fresh(args)).split(f"def {f.__name__}_forward")[1]
        assert "copy_when_read(" not in mine, mine


def test_the_site_says_it_is_copied_where_read():
    args = _rk4_args(np.random.default_rng(4))
    sites = adgen.explain(rk4, *fresh(args), file=None)
    at = line_of(rk4, "y += 0.1 / 6.0")
    mine = [s for s in sites if s.line == at]
    assert mine and all("copied where it is read" in s.reason and
                        s.bytes_saved == 3 * 5 * 8 for s in mine), sites


def test_a_method_and_a_lambda():
    rng = np.random.default_rng(5)
    m = Model(rng.standard_normal((4, 4)) / 2.0)
    x = rng.standard_normal(4)
    check_gradient(m.step, (x,), (0,), adgen_grad("save"))
    check_value(m.step, (x,), (0,), "save")
