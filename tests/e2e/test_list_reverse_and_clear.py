"""``L.reverse()`` and ``L.clear()`` of a list the function builds are differentiated (since
session 28): where only the name reaches the list (analyses.unshared_lists), lower_mutation
binds the name to the reversed list (``L = list(L[::-1])``) or to a new empty one, as it does
for ``L.sort()``, ``L.pop(i)`` and ``L.insert(i, v)``. Both were refused ("the in-place method
.reverse() is not supported yet"). Gradients against central differences under both
policies, jvp and hessian against them, a hand formula; a list another name reaches stays
refused at the line."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
V = np.cos(np.arange(4.0))


def reversed_then_inserted(x):
    a = list(x)
    a.reverse()
    a.insert(1, x[0] ** 2)
    b = a[:3] + a[3:] * 1
    return sum(v * (i + 1) for i, v in enumerate(b))


def reversed_then_removed(x):
    a = [x[0] * x[1], np.sin(x[2]), x[3] ** 2]
    a.reverse()
    a.remove(a[1])
    return a[0] * 2.0 + a[1] ** 3


def reversed_twice(x):
    a = x.tolist()
    a.reverse()
    a.reverse()
    a.insert(0, x[1] * 5.0)
    return a[0] * a[1] - a[-1]


def cleared_then_refilled(x):
    a = [x[0] * 2.0, x[1]]
    s = sum(a)
    a.clear()
    a.append(x[2] ** 2)
    return s * a[0] + len(a)


def window_cleared_in_a_loop(x):
    acc = []
    tot = 0.0
    for i in range(3):
        acc.append(x[i] * x[i + 1])
        if i == 1:
            tot = tot + sum(acc) ** 2
            acc.clear()
    return tot + sum(acc) * 3.0


CASES = [reversed_then_inserted, reversed_then_removed, reversed_twice, cleared_then_refilled,
         window_cleared_in_a_loop]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    check_jvp(f, (X.copy(),), (V,))


@pytest.mark.parametrize("f", CASES[:4], ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # reversed_then_inserted: b = [x3, x0^2, x2, x1, x0], weights 1..5:
    # d/dx0 = 4 x0 + 5, d/dx1 = 4, d/dx2 = 3, d/dx3 = 1
    expected = np.array([4 * X[0] + 5, 4.0, 3.0, 1.0])
    assert_grad_close(adgen.grad(reversed_then_inserted)(X.copy()), expected)
    assert reversed_then_inserted(X) == pytest.approx(
        X[3] + 2 * X[0] ** 2 + 3 * X[2] + 4 * X[1] + 5 * X[0])


def shared_then_reversed(x):
    xs = [x[0], x[1] * 2.0]
    ys = xs
    xs.reverse()  # MARK shared
    return ys[0] * 3.0


def handed_in(xs):
    xs.reverse()  # MARK parameter
    return xs[0]


def calls_a_helper_reversing(x):
    return handed_in([x[0], x[1] * 2.0]) * 3.0


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("f, mark", [(shared_then_reversed, "# MARK shared"),
                                     (calls_a_helper_reversing, "# MARK parameter")])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_list_another_name_reaches_is_refused(f, mark, mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line(mark))
    assert ".reverse()" in err.message and "[::-1]" in err.hint
