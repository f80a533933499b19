"""A list or dict filled in a loop, then an item written in place after it, as people write
a buffer of per-step results (``acc.append(x[k] * 2.0)`` ... ``acc[0] *= 3.0``); and lists
joined with ``+`` whose items are written through the joined list.

Silent wrong gradients before:
- filled in a loop: the loop's pullback computed the appended value again from ``x``
  (reverse_final: a part of an array times a number), a new object, while the adjoint of the
  item written in place was in the shadow memory of the object in the list: a zero gradient
  for everything before the write (reverse_final keeps such values on the tape now);
- ``c = a + b; c[0] *= c[1]``: effects took ``c`` for a new buffer, not a list holding a's
  and b's arrays, so the write did not reach ``a[0]``'s gradient (now effects'
  ``_sequences_joined``; the same for tuples).
Checked against central differences under both policies (strict may refuse a write that
overwrites what a gradient reads, naming both lines), with value_and_grad, a method and a
lambda."""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])


def appended_scaled(x):
    acc = []
    for k in range(2):
        acc.append(x[3 * k:3 * k + 3] * 2.0)
    acc[0] *= 3.0
    return np.sum(acc[0]) + np.sum(acc[1] ** 2)


def appended_second_scaled(x):
    acc = []
    for k in range(2):
        acc.append(x[3 * k:3 * k + 3] * 2.0)
    acc[1] *= 3.0
    return np.sum(acc[0] * acc[1]) + np.sum(acc[1] ** 2)


def appended_then_product(x):
    acc = []
    for k in range(2):
        v = x[3 * k:3 * k + 3] * 2.0
        acc.append(v)
    acc[0] *= acc[1]
    return np.sum(acc[0]) + np.sum(acc[1] ** 2)


def stored_by_index(x):
    acc = [None, None]
    for k in range(2):
        acc[k] = x[3 * k:3 * k + 3] * 2.0
    acc[0] *= acc[1]
    return np.sum(acc[0]) + np.sum(acc[1] ** 2)


def dict_by_step(x):
    d = {}
    for k in range(2):
        d[k] = x[3 * k:3 * k + 3] * 2.0
    d[0][1:] = 0.0
    return np.sum(d[0] * d[1]) + np.sum(d[1] ** 2)


def rows_appended(x):
    m = np.reshape(x * 1.5, (2, 3))
    rows = []
    for k in range(2):
        rows.append(m[k])
    rows[1] *= 2.0  # a view: writes m too
    return np.sum(m ** 2) + np.sum(rows[0] * rows[1])


def joined(x):
    a = [x[:3] * 2.0]
    b = [x[3:] ** 2]
    c = a + b
    c[0] *= c[1]
    return np.sum(a[0]) + np.sum(b[0])


def joined_by_star(x):
    a = [x[:3] * 2.0]
    b = [x[3:] ** 2]
    both = [*a, *b]
    both[0] *= both[1]
    return np.sum(a[0])


def joined_tuples(x):
    a = (x[:3] * 1.0,)
    b = (x[3:] * 2.0,)
    t = a + b
    t[0][0] = 5.0
    return np.sum(a[0] * b[0])


def joined_in_a_loop(x):
    acc = []
    for k in range(2):
        acc = acc + [x[3 * k:3 * k + 3] * 2.0]
    acc[0] *= acc[1]
    return np.sum(acc[0]) + np.sum(acc[1] ** 2)


CASES = [appended_scaled, appended_second_scaled, appended_then_product, stored_by_index,
         dict_by_step, rows_appended, joined, joined_by_star, joined_tuples, joined_in_a_loop]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    try:
        check_grad(f, (X,), mutation=mutation)
    except adgen.MutationError as err:
        # strict refuses a write over a value a gradient reads: never a wrong number
        assert mutation == "strict" and "overwrites" in str(err)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_value_and_grad(f):
    value, g = adgen.value_and_grad(f)(X.copy())
    assert value == pytest.approx(f(X.copy()))
    np.testing.assert_allclose(g, numerical_grad(f, (X,), 0), rtol=1e-5, atol=1e-6)


class Recorder:
    """A method filling a list per step, as a model's forward pass keeps its activations."""

    def __init__(self, scale):
        self.scale = scale

    def run(self, x):
        outs = []
        for k in range(2):
            outs.append(x[3 * k:3 * k + 3] * self.scale)
        outs[0] *= 3.0
        return np.sum(outs[0] * outs[1])


def test_method_and_lambda():
    model = Recorder(2.0)
    np.testing.assert_allclose(adgen.grad(model.run)(X.copy()),
                               numerical_grad(model.run, (X,), 0), rtol=1e-5, atol=1e-6)
    f = lambda x: appended_scaled(x) * 2.0  # noqa: E731 - as people write it
    np.testing.assert_allclose(adgen.grad(f)(X.copy()), numerical_grad(f, (X,), 0),
                               rtol=1e-5, atol=1e-6)
