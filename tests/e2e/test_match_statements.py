"""``match`` statements in a loss, as people write them: on an int mode, on a string option,
on a tuple of values with captures and guards, with or-patterns, a wildcard, ``None``, and a
case that returns early; in a loop and in a helper. Gradients against central differences
under both policies, forward mode and second order; the patterns adgen does not write are
refused at the line."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4])


def by_mode(x):
    s = 0.0
    for k in range(4):
        match k % 3:
            case 0:
                s = s + x[k] ** 2
            case 1 | 2 if x[k] > 0:
                s = s + np.sin(x[k])
            case _:
                s = s - 0.5 * x[k]
    return s


def _activation(z, kind):
    match kind:
        case "tanh":
            return np.tanh(z)
        case "relu" | "rectifier":
            return np.maximum(z, 0.0)
        case None:
            return z
        case other:
            raise ValueError(f"unknown activation {other}")


def by_name(x):
    return np.sum(_activation(x, "tanh") * _activation(x, "relu")) + np.sum(_activation(x, None))


def by_shape(x):
    pair = (x[0], x[1])
    match pair:
        case (a, b) if a > b:
            t = a * b
        case (a, b):
            t = a - b
    match [x[2], x[3], 1.0]:
        case [c, d]:
            return t + c
        case [c, d, w]:
            return t + w * c * d
    return 0.0


def nested_captures(x):
    match (x[0], (x[1], x[2])):
        case (first, (second, third) as rest):
            return first * second + third ** 2 + len(rest)
    return 0.0


CASES = [by_mode, by_name, by_shape, nested_captures]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    check_grad(f, (X,), mutation=mutation)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    v = np.array([0.5, -1.0, 0.25, 2.0])
    check_jvp(f, (X,), (v,), rtol=1e-6, atol=1e-9)


def test_second_order():
    # by_shape at X: (a, b) = (0.3, -0.7), a > b: t = a * b; [c, d, w]: + c * d
    h = adgen.hessian(by_shape)(X.copy())
    want = np.zeros((4, 4))
    want[0, 1] = want[1, 0] = 1.0
    want[2, 3] = want[3, 2] = 1.0
    np.testing.assert_allclose(h, want, atol=1e-12)


def test_the_arm_that_raises_raises_as_in_python():
    def f(x):
        return np.sum(_activation(x, "swish"))

    with pytest.raises(ValueError, match="unknown activation swish"):
        adgen.grad(f)(X.copy())


def test_an_array_is_not_a_sequence_pattern():
    def f(x):
        match x:
            case (a, b, _, _):
                return a * b
            case _:
                return np.sum(x ** 3)

    np.testing.assert_allclose(adgen.grad(f)(X.copy()), 3 * X ** 2)


def test_a_class_pattern_is_refused_at_its_line():
    def f(x):
        match x:
            case np.ndarray(shape=(4,)):
                return np.sum(x)
        return 0.0

    with pytest.raises(adgen.UnsupportedError, match="class pattern") as err:
        adgen.grad(f)(X.copy())
    assert "test_match_statements.py" in str(err.value)
